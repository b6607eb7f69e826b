#!/bin/bash
# SPDX-License-Identifier: MIT
# The report of one storm-lab run: a CSV time series, a plot, and the
# checks of doc/storm-lab.md, from what collectd recorded (its csv plugin),
# the phases the scenario wrote, and the notifications in collectd's log.
#
#   lab/report.sh [--mode storm|noretry] [--no-plugin] [--capacity C]
#                 RUN_DIR OUT_DIR
#
# --capacity C: php-fpm's capacity (req/s) measured in another run (the
# storm run's, for the noretry run, whose queue never fills): the truth the
# learned service time is checked against when this run measures none.
# Writes OUT_DIR/storm-lab.csv, OUT_DIR/storm-lab.png, OUT_DIR/summary.txt;
# exits 1 when a check fails.
set -u

mode=storm
use_plugin=1
given_capacity=""
while [ $# -gt 0 ]; do
  case $1 in
  --mode) mode=$2; shift 2 ;;
  --no-plugin) use_plugin=0; shift ;;
  --capacity) given_capacity=$2; shift 2 ;;
  *) break ;;
  esac
done
[ $# -eq 2 ] || { echo "usage: lab/report.sh [--mode storm|noretry] [--no-plugin] [--capacity C] RUN_DIR OUT_DIR" >&2; exit 2; }
run=$1
out=$2
src=$(cd "$(dirname "$0")" && pwd)
host=${LAB_HOST:-storm-lab}
service=storm_lab
# The service that learns its service time (lab/service.yaml), when the
# run's service file has it: its outputs are the columns ml_*.
learned=storm_lab_learned
has_learned=0
if [ "$use_plugin" = 1 ] && grep -Eq "^ *- name: $learned *$" "$run/service.yaml" 2>/dev/null; then
  has_learned=1
fi
mkdir -p "$out"
csv=$out/storm-lab.csv

# Thresholds of the checks (fractions of the offered load, seconds).
HEALTHY_GOODPUT=0.95 # healthy: goodput at least this share of offered
HEALTHY_RETRIES=0.02 # healthy: retries at most this share of offered
STORM_GOODPUT=0.05   # storm: goodput at most this share ("near zero")
STEP_GOODPUT=0.10    # staircase step above recovery: still a storm
RECOVERED=0.90       # recovered: goodput at least this share...
RECOVERED_FOR=5      # ...for this many seconds in a row
FEW_INTERVALS=5      # the plugin must call the storm within this many s
SETTLE=3             # seconds after a load change left out of a step
RECOVERY_TOLERANCE=0.10 # model's recovery load vs the lab's
NORETRY_HEAL=15      # retries off: healed within this many s of the trigger
AGREE=0.03           # collectd's rates vs the scenario's own socket reads
DISAGREE=0.05        # storm flag vs goodput-based truth: at most this share of s
CLEAR=3              # the service's clear_after (the plugin's default)
LEARNED_TOLERANCE=0.10 # learned service time vs the truth; its tipping and
                     # recovery loads vs storm_lab's
LEARNED_SE=2         # ...widened by this many of the plugin's standard errors
                     # for what it learned from the healthy phase alone
LAB_SERVICE_TIME=0.050 # lab/work.php's mean sleep: the truth when no run
                     # measured the capacity

# ---------------------------------------------------------------------
# 1. The time series: one row per second, each column the latest value
#    collectd recorded at or before that second (none if older than 2 s).
columns="offered:haproxy-fe_web/derive-requests
goodput:haproxy-fe_web/derive-responses_2xx
failed_replies:haproxy-fe_web/derive-responses_5xx
attempts:haproxy-be_app/derive-attempts
retries:haproxy-be_app/derive-retries
failed_attempts:haproxy-be_app/derive-failed_attempts
in_flight:haproxy-be_app/gauge-attempts_in_flight
nginx_requests:nginx/nginx_requests
pool_size:phpfpm-lab/gauge-total_processes
fpm_active:phpfpm-lab/gauge-active_processes
fpm_queue:phpfpm-lab/gauge-listen_queue
fpm_throughput:phpfpm-lab/derive-accepted_conn"
if [ "$use_plugin" = 1 ]; then
  # Every type the plugin can dispatch, in the order of conf/types.db.
  while read -r t; do
    columns="$columns
ms_$t:metastable-$service/$t"
    [ "$has_learned" = 1 ] && columns="$columns
ml_$t:metastable-$learned/$t"
  done < <(awk '!/^#/ && NF { print $1 }' "$src/../conf/types.db")
fi

names=""
count=0
for c in $columns; do
  count=$((count + 1))
  names="$names,${c%%:*}"
done
i=0
for c in $columns; do
  i=$((i + 1))
  for f in "$run/csv/$host/${c#*:}"-*; do
    [ -f "$f" ] && awk -F, -v s="$i" 'NR > 1 { print $1, s, $2 }' "$f"
  done
done | sort -n -k1,1 |
  awk -v n="$count" -v names="$names" -v phases="$run/phases" '
    BEGIN {
      while ((getline l < phases) > 0) { split(l, p, " "); np++; pt[np] = p[1]; pn[np] = p[2] }
      t0 = pt[1]; tick = t0; ip = 1
      printf "time_s,epoch,phase%s\n", names
    }
    function row(   s, line) {
      while (ip < np && pt[ip + 1] <= tick + 1e-6) ip++
      line = sprintf("%d,%.3f,%s", tick - t0 + 0.5, tick, pn[ip])
      for (s = 1; s <= n; s++)
        line = line "," ((s in lt) && tick - lt[s] <= 2 ? v[s] : "")
      print line
    }
    $1 < t0 - 2 { v[$2] = $3; lt[$2] = $1; next }
    {
      while (tick < $1) { if (tick >= t0) row(); tick += 1 }
      if ($3 != "nan") { v[$2] = $3 + 0; lt[$2] = $1 } else delete lt[$2]
    }
    END { if (tick >= t0) row() }' >"$csv"

rows=$(($(wc -l <"$csv") - 1))
[ "$rows" -gt 10 ] || { echo "report: only $rows rows in $csv (collectd recorded nothing?)" >&2; exit 1; }

# Notifications the plugin sent (collectd's logfile plugin logs them), one
# file per service ("plugin_instance = storm_lab," is not storm_lab_learned).
notes=$out/notifications.txt
grep -h "Notification: severity = " "$run/collectd.log" 2>/dev/null |
  grep "plugin_instance = $service," >"$notes"
n_failure=$(grep -c "severity = FAILURE" "$notes")
n_okay=$(grep -c "severity = OKAY" "$notes")
note_time() { # epoch of the first notification of severity $1
  grep -m1 "severity = $1" "$notes" | sed -E 's/^\[([^]]*)\].*/\1/' |
    { read -r d && date -d "$d" +%s; }
}
t_failure=$(note_time FAILURE || true)
t_okay=$(note_time OKAY || true)
log_epoch() { # epoch of a line of collectd's log ("[2026-12-01 17:27:27] ...")
  sed -E 's/^\[([^]]*)\].*/\1/' | { read -r d && date -d "$d" +%s; }
}

# The learned service: its notifications, the plugin's INFO line when the
# learned service time was taken into use ("learned service time 51.2 ms ±
# 1.3 ms (configured 80 ms)"), the misfit WARNINGs of both services
# ("service:epoch ..."), and the log lines saying a calibration input gave
# no sample (rate-limited by the plugin: lines, not intervals).
learned_value="" learned_t="" misfits="" calib_lines=0 calib_first="" learned_notes=""
if [ "$has_learned" = 1 ]; then
  grep -h "Notification: severity = " "$run/collectd.log" 2>/dev/null |
    grep "plugin_instance = $learned," >"$out/notifications-$learned.txt"
  for sev in FAILURE WARNING OKAY; do
    learned_notes="$learned_notes, $(grep -c "severity = $sev" "$out/notifications-$learned.txt") $sev"
  done
  learned_notes=${learned_notes#, }
  line=$(grep -m1 "service \"$learned\": learned service time" "$run/collectd.log")
  if [ -n "$line" ]; then
    learned_value=$(sed -nE 's/.*learned service time ([0-9.eE+-]+) ms ± ([0-9.eE+-]+) ms.*/\1 \2/p' <<<"$line")
    learned_t=$(log_epoch <<<"$line")
  fi
  for s in "$service" "$learned"; do
    f=$notes
    [ "$s" = "$learned" ] && f=$out/notifications-$learned.txt
    while read -r line; do
      misfits="$misfits $s:$(log_epoch <<<"$line")"
    done < <(grep "does not fit" "$f")
  done
  calib_lines=$(grep -c "service \"$learned\": calibration: " "$run/collectd.log")
  calib_first=$(grep -m1 "service \"$learned\": calibration: " "$run/collectd.log" |
    sed -E 's/.*calibration: //; s/,/;/g')
fi

# ---------------------------------------------------------------------
# 2. The checks.
summary=$out/summary.txt
awk -F, -v mode="$mode" -v plugin="$use_plugin" \
  -v n_failure="$n_failure" -v n_okay="$n_okay" \
  -v t_failure="${t_failure:-}" -v t_okay="${t_okay:-}" \
  -v HG="$HEALTHY_GOODPUT" -v HR="$HEALTHY_RETRIES" -v SG="$STORM_GOODPUT" \
  -v STG="$STEP_GOODPUT" -v RG="$RECOVERED" -v RF="$RECOVERED_FOR" \
  -v FEW="$FEW_INTERVALS" -v SETTLE="$SETTLE" -v RT="$RECOVERY_TOLERANCE" \
  -v HEAL="$NORETRY_HEAL" -v AGREE="$AGREE" -v DISAGREE="$DISAGREE" -v CLEAR="$CLEAR" \
  -v direct="$run/direct.txt" \
  -v learned="$has_learned" -v LT="$LEARNED_TOLERANCE" -v LSE="$LEARNED_SE" -v LST="$LAB_SERVICE_TIME" \
  -v given_capacity="$given_capacity" -v learned_value="$learned_value" \
  -v learned_t="${learned_t:-}" -v misfits="$misfits" \
  -v calib_lines="$calib_lines" -v calib_first="$calib_first" \
  -v learned_notes="$learned_notes" '
  BEGIN {
    # The per-second reads of HAProxy by the scenario itself: clock offered
    # goodput attempts php-fpm queue.
    while ((getline l < direct) > 0) { split(l, f, " "); nd++; dt[nd] = f[1]; doff[nd] = f[2]; datt[nd] = f[4] }
  }
  NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  {
    n++
    for (k in c) d[n, k] = $(c[k])
    ph = $(c["phase"])
    if (!(ph in start)) { start[ph] = n; order[++nph] = ph }
    stop[ph] = n
  }
  function val(r, k) { return d[r, k] }
  function has(r, k) { return d[r, k] != "" }
  # mean of column k over rows a..b (rows without a value left out)
  function mean(k, a, b,   r, s, m) {
    for (r = a; r <= b; r++) if (has(r, k)) { s += val(r, k); m++ }
    return m ? s / m : -1
  }
  function check(ok, what) {
    printf "%s  %s\n", ok ? "PASS" : "FAIL", what
    if (!ok) failed++
    checks++
  }
  function last(ph, secs,   a) { a = stop[ph] - secs + 1; return a < start[ph] ? start[ph] : a }
  # first row >= a where goodput >= RG * offered for RF rows in a row
  function recovery_row(a,   r, k) {
    k = 0
    for (r = a; r <= n; r++) {
      if (has(r, "offered") && val(r, "offered") > 0 && val(r, "goodput") >= RG * val(r, "offered")) {
        if (++k >= RF) return r - RF + 1
      } else k = 0
    }
    return 0
  }
  # every row a..b with a plugin value has column k == v
  function all_eq(k, v, a, b,   r, m) {
    for (r = a; r <= b; r++) if (has(r, k)) { if (val(r, k) != v) return 0; m++ }
    return m > 0
  }
  function t(r) { return val(r, "time_s") }
  # the first row at or after epoch e (n when none)
  function row_at(e,   r) { for (r = 1; r <= n; r++) if (val(r, "epoch") >= e - 0.5) return r; return n }
  # column k (times scale, 1 if not given) over rows a..b: "mean
  # [least..greatest]"
  function span(k, a, b, scale,   r, m, s, lo, hi, x) {
    if (scale == "") scale = 1
    for (r = a; r <= b; r++) if (has(r, k)) { x = scale * val(r, k); s += x; if (!m || x < lo) lo = x; if (!m || x > hi) hi = x; m++ }
    return m ? sprintf("%.1f [%.1f..%.1f]", s / m, lo, hi) : "none"
  }
  function pct(x, ref) { return ref > 0 ? 100 * (x - ref) / ref : 0 }
  function within(x, ref, tol) { return x > 0 && ref > 0 && (x - ref) ^ 2 <= (tol * ref) ^ 2 }
  # The tolerance of a value learned from rows a..b: LT, widened by LSE
  # relative standard errors as the plugin gives them (their mean over the
  # rows) when wide is set.  The healthy phase gives 20-30 one-second
  # snapshots of the active processes of php-fpm, whose mean scatters by
  # 5-6 % from run to run: LT alone would fail about one run in ten by
  # chance.
  function tolerance(a, b, wide,   r, m, s) {
    if (!wide) return LT
    for (r = a; r <= b; r++)
      if (has(r, "ml_service_time_error") && val(r, "ml_service_time_estimate") > 0) { s += val(r, "ml_service_time_error") / val(r, "ml_service_time_estimate"); m++ }
    return LT + (m ? LSE * s / m : 0)
  }
  function tol_text(tol) { return tol > LT + 1e-9 ? sprintf("within %d%% + %d standard errors = %.1f%%", LT * 100, LSE, 100 * tol) : sprintf("within %d%%", LT * 100) }
  # the tipping and recovery loads of the learned service against
  # storm_lab, rows a..b
  function against(what, a, b, wide,   lt, st, lr, sr, tol) {
    lt = mean("ml_tipping_load", a, b); st = mean("ms_tipping_load", a, b)
    lr = mean("ml_recovery_load", a, b); sr = mean("ms_recovery_load", a, b)
    tol = tolerance(a, b, wide)
    check(b >= a && within(lt, st, tol) && within(lr, sr, tol),
      sprintf("learned model %s (%d-%d s): tipping load %.1f vs storm_lab %.1f req/s (%+.1f%%), recovery load %.1f vs %.1f req/s (%+.1f%%; %s)",
        what, t(a), t(b), lt, st, pct(lt, st), lr, sr, pct(lr, sr), tol_text(tol)))
  }
  # The service that learns its service time (storm_lab_learned: 80 ms in
  # the file, calibrate: [service_time]) against the truth, 10 workers over
  # the capacity php-fpm showed, and against storm_lab.
  function learned_checks(   cap, pool, truth, how, r, k, inuse, v, st, se, last_r, a, b, lrec, i, j, ph, line, nm, parts, row, svc, m_both, m_diff, u1, u2, tol) {
    cap = capacity > 0 ? capacity : given_capacity + 0
    pool = mean("pool_size", 1, n); if (pool <= 0) pool = 10
    if (cap > 0) {
      truth = pool / cap
      how = sprintf("%d workers / %.1f req/s, the capacity php-fpm showed %s", pool, cap, capacity > 0 ? "in this run" : "in the storm run")
    } else { truth = LST; how = "lab/work.php mean sleep: no capacity measured" }
    # the intervals it reported until calibrated turned 1
    k = 0; inuse = 0
    for (r = 1; r <= n; r++) {
      if (has(r, "ml_reporting") && val(r, "ml_reporting") == 1) k++
      if (has(r, "ml_calibrated") && val(r, "ml_calibrated") >= 1) { inuse = r; break }
    }
    check(inuse && inuse < trig && all_eq("ml_calibrated", 1, inuse, n),
      sprintf("learned service time in use after %d intervals: calibrated 1 from %d s (before the trigger at %d s) to the end; the plugin logged it %s",
        k, inuse ? t(inuse) : -1, t(trig), learned_t != "" ? sprintf("at %d s", learned_t - val(1, "epoch") + 0.5) : "never"))
    if (!inuse) return
    # the value taken into use: the INFO line, else the CSV at that row
    if (split(learned_value, v, " ") == 2) { st = v[1] / 1000; se = v[2] / 1000 }
    else { st = val(inuse, "ml_service_time_estimate"); se = val(inuse, "ml_service_time_error") }
    tol = st > 0 ? LT + LSE * se / st : LT
    check(within(st, truth, tol),
      sprintf("learned service time taken into use: %.1f ms ± %.1f ms (configured 80 ms), truth %.1f ms (%+.1f%%; %s; %s)",
        1000 * st, 1000 * se, 1000 * truth, pct(st, truth), how, tol_text(tol)))
    for (r = n; r >= 1 && !has(r, "ml_service_time_estimate"); r--) ;
    last_r = r
    st = val(last_r, "ml_service_time_estimate"); se = val(last_r, "ml_service_time_error")
    line = sprintf("learned service time at the end: %.1f ms ± %.1f ms, truth %.1f ms (%+.1f%%", 1000 * st, 1000 * se, 1000 * truth, pct(st, truth))
    if (mode == "storm") check(within(st, truth, LT), line sprintf("; within %d%%)", LT * 100))
    else printf "INFO  %s; not checked: the estimate still holds the trigger\047s ten times slower requests)\n", line
    # tipping and recovery loads: before the trigger, and (storm run) from
    # the lab recovery on, once the trigger has faded from the estimate
    against("before the trigger", inuse, trig - 1, 1)
    lrec = mode == "storm" ? rec : 0
    if (lrec) {
      against("from the lab recovery to the end", lrec, n, 0)
      printf "INFO  learned model in the storm (%d-%d s, the trigger in its estimate): tipping load %s, recovery load %s req/s (storm_lab %.1f, %.1f)\n",
        t(trig), t(lrec - 1), span("ml_tipping_load", trig, lrec - 1), span("ml_recovery_load", trig, lrec - 1),
        mean("ms_tipping_load", trig, lrec - 1), mean("ms_recovery_load", trig, lrec - 1)
      printf "INFO  lab recovered at %.1f req/s: learned recovery load %.1f, storm_lab %.1f req/s\n",
        obs_rec, mean("ml_recovery_load", lrec, n), mean("ms_recovery_load", lrec, n)
    } else if (mode != "storm")
      printf "INFO  learned model after the trigger (%d-%d s): tipping load %s req/s (storm_lab %.1f); service time %s ms\n",
        t(trig), t(n), span("ml_tipping_load", trig, n), mean("ms_tipping_load", trig, n), span("ml_service_time_estimate", trig, n, 1000)
    # its own verdicts, not checked: the storm flag against storm_lab, the
    # notifications, and (storm run) drain_time over the drain
    for (r = inuse; r <= n; r++) if (has(r, "ml_storm") && has(r, "ms_storm")) { m_both++; if (val(r, "ml_storm") != val(r, "ms_storm")) m_diff++ }
    printf "INFO  learned service verdicts: storm flag differs from storm_lab\047s in %d of %d s once learned; notifications %s\n",
      m_diff, m_both, learned_notes
    if (lrec && first_below != "") {
      a = start[first_below]; b = lrec - 1
      for (r = a + SETTLE; r <= b; r++) { if (!has(r, "ms_drain_time")) u1++; if (!has(r, "ml_drain_time")) u2++ }
      printf "INFO  drain_time over the drain (%d-%d s; goodput back at %d s), mean [least..greatest]: storm_lab %s s (undrainable %d s), learned %s s (undrainable %d s)\n",
        t(a + SETTLE), t(b), t(lrec), span("ms_drain_time", a + SETTLE, b), u1, span("ml_drain_time", a + SETTLE, b), u2
    }
    # the residual of both services, phase by phase
    for (i = 1; i <= 2; i++) {
      svc = i == 1 ? "ms" : "ml"
      line = ""
      for (j = 1; j <= nph; j++) {
        ph = order[j]
        if (svc == "ml" && ph == "healthy" && inuse > start[ph] && inuse <= stop[ph]) {
          line = line sprintf("; healthy at 80 ms %s; healthy learned %s", span("ml_model_residual", start[ph], inuse - 1), span("ml_model_residual", inuse, stop[ph]))
          continue
        }
        line = line sprintf("; %s %s", ph, span(svc "_model_residual", start[ph], stop[ph]))
      }
      printf "INFO  model_residual of %s by phase, mean [least..greatest]: %s\n", i == 1 ? "storm_lab" : "storm_lab_learned", substr(line, 3)
    }
    # the misfit WARNINGs
    line = ""
    nm = split(misfits, parts, " ")
    for (i = 1; i <= nm; i++) {
      split(parts[i], v, ":"); row = row_at(v[2])
      line = line sprintf(", %s at %d s (%s)", v[1], t(row), val(row, "phase"))
    }
    printf "INFO  misfit WARNINGs: %s\n", nm ? substr(line, 3) : "none"
    printf "INFO  calibration inputs without a sample: %d log lines%s\n", calib_lines,
      calib_lines ? " (first: " calib_first ")" : ""
  }
  # collectd (the CSV) against the reads of the scenario itself, rows a..b
  function agree(what, a, b,   e1, e2, i, so, sa, m, co, ca) {
    e1 = val(a, "epoch") - 0.5; e2 = val(b, "epoch") + 0.5
    for (i = 1; i <= nd; i++) if (dt[i] > e1 && dt[i] <= e2) { so += doff[i]; sa += datt[i]; m++ }
    if (!m) { check(0, "no reads of its own by the scenario in " what); return }
    so /= m; sa /= m; co = mean("offered", a, b); ca = mean("attempts", a, b)
    check(co > 0 && ca > 0 && (co - so) ^ 2 <= (AGREE * so) ^ 2 && (ca - sa) ^ 2 <= (AGREE * sa) ^ 2,
      sprintf("collectd agrees with HAProxy (%s): offered %.1f vs %.1f, attempts %.1f vs %.1f req/s (collectd vs stats socket, within %d%%)",
        what, co, so, ca, sa, AGREE * 100))
  }
  END {
    if (!("healthy" in start)) { print "FAIL  no healthy phase in the series"; exit 1 }
    # Healthy phase: the last 15 s before the trigger.
    a = last("healthy", 15); b = stop["healthy"]
    off = mean("offered", a, b); good = mean("goodput", a, b); ret = mean("retries", a, b)
    check(off > 0 && good >= HG * off && ret <= HR * off,
      sprintf("lab healthy: offered %.1f req/s, goodput %.1f, retries %.1f/s (HAProxy)", off, good, ret))
    agree("healthy", a, b)
    if (plugin)
      check(all_eq("ms_storm", 0, a, b) && all_eq("ms_state", mode == "storm" ? 1 : 0, a, b),
        sprintf("plugin healthy: state %s, storm 0 at %.1f req/s (tipping %.1f, recovery %.1f req/s)",
          mode == "storm" ? "vulnerable" : "stable", mean("ms_offered_load", a, b),
          mean("ms_tipping_load", a, b), mean("ms_recovery_load", a, b)))
    trig = start["trigger"]; trig_t = val(trig, "epoch")
    if (mode == "storm" && ("near" in start)) {
      # Just under the tipping load: healthy, and the plugin says so (no
      # storm, no FAILURE before the trigger; the state may be vulnerable
      # or, with the offered load a hair over the tipping load, overloaded
      # without a storm: the next trigger latches).
      a = start["near"] + SETTLE; b = stop["near"]
      off = mean("offered", a, b); good = mean("goodput", a, b)
      check(off > 0 && good >= HG * off,
        sprintf("lab near the tipping load: offered %.1f req/s, goodput %.1f", off, good))
      if (plugin)
        check(all_eq("ms_storm", 0, start["near"], b) && (t_failure == "" || t_failure >= trig_t - 1),
          sprintf("plugin near the tipping load: storm 0 at %.1f req/s (tipping %.1f req/s), no FAILURE before the trigger",
            mean("ms_offered_load", a, b), mean("ms_tipping_load", a, b)))
    }

    if (mode == "storm") {
      # The storm after the trigger, at the same offered load.
      a = start["storm"] + SETTLE; b = stop["storm"]
      off = mean("offered", a, b); good = mean("goodput", a, b); att = mean("attempts", a, b)
      storm_off = off
      agree("storm", a, b)
      check(good <= SG * off && att >= 2.5 * off,
        sprintf("lab storm after the trigger: offered %.1f req/s, goodput %.1f, attempts %.1f/s (x%.2f)",
          off, good, att, att / off))
      # Capacity: php-fpm throughput while its listen queue is full.
      for (r = start["storm"] + SETTLE; r <= n; r++)
        if (val(r, "phase") != "end" && has(r, "fpm_queue") && val(r, "fpm_queue") >= 450 && has(r, "fpm_throughput")) {
          cs += val(r, "fpm_throughput"); cm++
        }
      capacity = cm ? cs / cm : -1
      printf "INFO  capacity: php-fpm served %.1f req/s while its queue was full (%d s)\n", capacity, cm

      if (plugin) {
        first = 0
        for (r = trig; r <= stop["storm"]; r++)
          if (val(r, "ms_storm") == 1 && val(r, "ms_state") == 2) { first = r; break }
        check(first && t(first) - t(trig) <= FEW && all_eq("ms_storm", 1, first, stop["storm"]) &&
              all_eq("ms_state", 2, first + 1, stop["storm"]),
          sprintf("plugin storm: metastable, storm 1 from %d s after the trigger to the end of the hold; model effective load %.1f attempts/s",
            first ? t(first) - t(trig) : -1, mean("ms_effective_load", start["storm"] + SETTLE, stop["storm"])))
        check(n_failure == 1 && t_failure >= trig_t - 1 && t_failure <= trig_t + FEW + 1,
          sprintf("plugin FAILURE notifications: %d (want 1, within %d s of the trigger)", n_failure, FEW))
      }

      # The staircase: the storm persists above the recovery load and ends
      # below it.
      rec_load = plugin ? mean("ms_recovery_load", 1, n) : -1
      rec = recovery_row(start["storm"])
      rec_phase = rec ? val(rec, "phase") : ""
      first_below = ""; last_storm = -1
      for (i = 1; i <= nph; i++) {
        ph = order[i]
        if (ph !~ /^step-/) continue
        a = start[ph] + SETTLE; b = stop[ph]
        # the load of the step: its rows after the change has settled (up to
        # the recovery, in the step that recovered)
        off = mean("offered", a, ph == rec_phase && rec > a ? rec : b)
        if (plugin && first_below == "" && off < rec_load) first_below = ph
        if (ph == rec_phase) {
          obs_rec = off
          printf "INFO  lab %s: offered %.1f req/s, recovered %d s into the step (goodput >= %d%% of offered for %d s)\n",
            ph, off, t(rec) - t(start[ph]), RG * 100, RF
          break
        }
        good = mean("goodput", a, b)
        check(good <= STG * off,
          sprintf("lab %s: still a storm at %.1f req/s (goodput %.1f, attempts %.1f/s, php-fpm queue %.0f)",
            ph, off, good, mean("attempts", a, b), mean("fpm_queue", a, b)))
        last_storm = off
        # the storm goes on below the recovery load while the backlog it
        # left drains: the flag follows the observations, not the model
        if (plugin)
          check(all_eq("ms_storm", 1, a, b),
            sprintf("plugin %s: storm 1 at %.1f req/s (%s the recovery load %.1f req/s; recovering %s)",
              ph, off, off > rec_load ? "above" : "below", rec_load,
              all_eq("ms_recovering", 1, a, b) ? "1" : all_eq("ms_recovering", 0, a, b) ? "0" : "0 then 1"))
      }
      check(rec > 0 && rec_phase ~ /^step-/,
        sprintf("lab recovered during the staircase: %s", rec ? rec_phase : "never"))
      if (plugin && rec) {
        check(obs_rec < rec_load && (rec_load - obs_rec) / obs_rec <= RT,
          sprintf("recovery load: model %.1f req/s, lab %.1f req/s (%+.1f%%; the lab must recover below the model and within %d%%)",
            rec_load, obs_rec, 100 * (rec_load - obs_rec) / obs_rec, RT * 100))
        fb = first_below != "" ? start[first_below] : n
        # the drain: from the first step below the recovery load until
        # goodput is back, the storm flag stays 1, and each second either
        # says recovering or holds metastable (the load within the noise
        # of the recovery load, doc/design.md §1.4)
        held = recov = other = 0
        for (r = fb + SETTLE; r < rec; r++) {
          if (!has(r, "ms_state")) continue
          if (val(r, "ms_recovering") == 1) recov++
          else if (val(r, "ms_state") == 2) held++
          else other++
        }
        check(first_below != "" && all_eq("ms_storm", 1, fb, rec - 1) && other == 0,
          sprintf("plugin drain: storm 1 from %s (below the recovery load) until goodput returned %d s later; %d s metastable (the load within the noise of the recovery load), %d s recovering, %d s neither",
            first_below, t(rec) - t(fb), held, recov, other))
        check(all_eq("ms_storm", 0, rec + FEW, n),
          sprintf("plugin storm 0 from %d s after goodput returned to the end", FEW))
        t_rec = val(rec, "epoch")
        check(n_okay == 1 && t_okay >= t_rec - 1 && t_okay <= t_rec + FEW + CLEAR + 1,
          sprintf("plugin OKAY notifications: %d (want 1, after goodput returned and within %d s of it)", n_okay, FEW + CLEAR))
        # drain_time at the start of the drain (the first value SETTLE s in)
        # and over it: how far the fluid prediction is from the lab
        d0 = -1; nd = 0
        for (r = fb + SETTLE; r < rec; r++) if (has(r, "ms_drain_time")) { if (d0 < 0) d0 = val(r, "ms_drain_time") + SETTLE; dd[++nd] = val(r, "ms_drain_time") }
        for (i = 2; i <= nd; i++) { v0 = dd[i]; for (j = i - 1; j >= 1 && dd[j] > v0; j--) dd[j + 1] = dd[j]; dd[j + 1] = v0 }
        printf "INFO  drain: goodput back %d s after %s began; drain_time %d s into it predicted %.0f s in all (median over the drain %.0f s remaining; undrainable in %d s)\n",
          t(rec) - t(fb), first_below, SETTLE, d0, nd ? dd[int((nd + 1) / 2)] : -1, rec - fb - SETTLE - nd
      }

      # The original load again: healthy now (hysteresis).
      a = last("final", 15); b = stop["final"]
      off = mean("offered", a, b); good = mean("goodput", a, b)
      check(good >= HG * off && off >= 0.95 * storm_off,
        sprintf("lab final: healthy at %.1f req/s (goodput %.1f), where it stormed before at %.1f", off, good, storm_off))
      if (plugin)
        check(all_eq("ms_storm", 0, a, b) && all_eq("ms_state", 1, a, b),
          "plugin final: vulnerable, storm 0")
      if (plugin) {
        # the storm flag against the truth of the lab (users failing: goodput
        # under RG of offered), second by second over the whole run
        for (r = 1; r <= n; r++) {
          if (val(r, "phase") == "end" || !has(r, "ms_storm") || !has(r, "offered") || val(r, "offered") <= 0) continue
          truth = val(r, "goodput") < RG * val(r, "offered") ? 1 : 0
          secs++; if (val(r, "ms_storm") != truth) { disagree++; if (truth) missed++; else extra++ }
        }
        check(secs > 0 && disagree <= DISAGREE * secs,
          sprintf("plugin storm flag vs the lab (goodput < %d%% of offered): disagree %d of %d s (%.1f%%: %d s failing without the flag, %d s the flag without failing; limit %d%%)",
            RG * 100, disagree, secs, secs ? 100 * disagree / secs : 0, missed, extra, DISAGREE * 100))
        printf "INFO  model: tipping load %.1f req/s, recovery load %.1f req/s\n", mean("ms_tipping_load", 1, n), rec_load
        printf "INFO  lab: storm down to %.1f req/s, recovered at %.1f req/s (php-fpm capacity %.1f req/s)\n",
          last_storm, obs_rec, capacity
      }
    } else {
      # Retries off: the same trigger heals by itself.
      a = start["after"]
      rec = recovery_row(a)
      check(rec > 0 && t(rec) - t(a) <= HEAL,
        sprintf("lab heals without retries: goodput back %d s after the trigger ended (limit %d s)",
          rec ? t(rec) - t(a) : -1, HEAL))
      b = stop["after"]; a2 = last("after", 10)
      off = mean("offered", a2, b); good = mean("goodput", a2, b)
      check(good >= HG * off, sprintf("lab after: goodput %.1f of %.1f req/s", good, off))
      check(mean("retries", 1, n) <= 0.01 * mean("offered", 1, n),
        sprintf("HAProxy retries nothing: %.2f retries/s", mean("retries", 1, n)))
      if (plugin) {
        check(all_eq("ms_storm", 0, 1, n) && all_eq("ms_state", 0, 1, n) && n_failure == 0,
          sprintf("plugin: stable, storm 0 throughout, %d FAILURE notifications (tipping = recovery = %.1f req/s: no bistable band without retries)",
            n_failure, mean("ms_tipping_load", 1, n)))
      }
    }
    if (plugin && learned) learned_checks()
    printf "%s: %d checks, %d failed\n", failed ? "FAIL" : "PASS", checks, failed
    exit failed ? 1 : 0
  }' "$csv" >"$summary"
status=$?
sed -i "1i == $mode run ($(basename "$run")): $rows s, $(date -d @"$(awk -F, 'NR == 2 { print $2 }' "$csv")" '+%F %T')" "$summary"

# ---------------------------------------------------------------------
# 3. The plot.
plot_flags=(--mode "$mode")
[ "$use_plugin" = 1 ] || plot_flags+=(--no-plugin)
"$src/plot.sh" "${plot_flags[@]}" "$csv" "$out/storm-lab.png" ||
  echo "report: plot failed" >&2
cat "$summary"
exit "$status"
