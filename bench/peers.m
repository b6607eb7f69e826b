## SPDX-License-Identifier: MIT
## GNU Octave's queueing package, erlangb and erlangc, for bench/bench_model's
## table beside the peers (doc/performance.md):
##
##   octave --no-gui --no-window-system --quiet --norc bench/peers.m POINTS OUT
##
## POINTS has one line per point, "column,servers,offered_erlangs" (a with
## 17 significant digits).  Each point is one call of erlangb (A, m) and one
## of erlangc (A, m), as a user computing one service would write them; the
## package computes B by the recursion 1/B_k = 1 + (k/A) / B_(k-1), O(m)
## interpreted steps.  OUT gets "form,index,a,B,C,lnB,lnC" per point (a as
## read, for the caller to check; lnB = log(B)) and
## "time,form,column,points,seconds": the wall time of the loop over the
## column's points, start-up and pkg load not counted.
##
## Exits 3 with one line on stdout when the queueing package is missing.
1;
args = argv ();
if (numel (args) != 2)
  error ("usage: peers.m POINTS OUT");
endif
try
  pkg load queueing
catch
  printf ("   Octave has no queueing package (%s): its row is skipped\n",
          lasterr ());
  exit (3);
end_try_catch
p = dlmread (args{1}, ",");
out = fopen (args{2}, "w");
info = pkg ("list", "queueing");
fprintf (out, "# octave %s, queueing %s\n", OCTAVE_VERSION, info{1}.version);
erlangb (5, 10); erlangc (5, 10);  # first-call costs out of the timing
for col = unique (p(:, 1))'
  idx = find (p(:, 1) == col)';
  b = c = zeros (size (idx));
  t0 = tic ();
  for j = 1:numel (idx)
    b(j) = erlangb (p(idx(j), 3), p(idx(j), 2));
    c(j) = erlangc (p(idx(j), 3), p(idx(j), 2));
  endfor
  t = toc (t0);
  for j = 1:numel (idx)
    fprintf (out, "octave_queueing,%d,%.17g,%.17g,%.17g,%.17g,%.17g\n",
             idx(j) - 1, p(idx(j), 3), b(j), c(j), log (b(j)), log (c(j)));
  endfor
  fprintf (out, "time,octave_queueing,%d,%d,%.17g\n", col, numel (idx), t);
endfor
fclose (out);
exit (0);
