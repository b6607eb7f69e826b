# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The runs of the lab's stacks (b) and (c), sourced by lab/gunicorn-lab.sh
# and lab/node-lab.sh: the staircase, the trigger run,
# their report and their line in lab/results.csv (doc/storm-lab.md).
#
# The stack's script calls stairs_setup with its options first (before
# lab/lib.sh, which reads LAB_BUILD), and defines, before it calls
# stairs_main:
#   STACK         the stack's name in the results ("gunicorn", "node")
#   SERVICE       the service's name in SERVICE_FILE; its twin
#                 SERVICE_learned learns a service time set wrong there
#   SERVICE_FILE  the service file the plugin watches; the model's
#                 predictions come from metastable solve --spec on it
#   CAP_QUEUE     the capacity is measured while the queue holds more
#   STEPS_UP, STEPS_DOWN, RATE, HEALTHY, FACTOR, TRIGGER, HOLD,
#   DRAIN_RATE, DRAIN_MAX, FINAL (below)
#   lab_sample    "epoch requests 2xx attempts completed queue" (lib.sh)
#   start_servers, start_collectd
#   lab_load RATE SECS (lib.sh's httperf, or the stack's own; LAB_PID is
#                 the load's process, or empty when nothing is to stop)
#   stack_end     optional: called when a run ends, before everything stops
#   stack_report  optional: lines of its own for the run's summary
#   LAB_RUN/app.log  "epoch asked took" per request served

# stairs_setup NAME HELP_LINES ROOT_WHY ARGS...: the stack script's
# options (--out DIR, --build DIR, --skip-install, --check, --runs RUNS,
# --help: lines HELP_LINES of the script, as "3,36"); root is needed to
# install, and for every run when ROOT_WHY is not empty (it says why).
# Installs unless --skip-install, checks the build, and sets out, build,
# LAB_BUILD (exported), check, runs and results.
stairs_setup() {
  local name=$1 help=$2 root_why=$3 install=1
  shift 3
  out="" build="" check=0 runs="staircase trigger"
  while [ $# -gt 0 ]; do
    case $1 in
    --out) out=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --skip-install) install=0; shift ;;
    --check) check=1; shift ;;
    --runs) runs=$2; shift 2 ;;
    -h | --help) sed -n "${help}p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "$name: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
  done
  if [ "$(id -u)" -ne 0 ]; then
    [ -z "$root_why" ] || { echo "$name: run as root ($root_why)" >&2; exit 2; }
    [ "$install" = 0 ] || { echo "$name: installing needs root (or --skip-install)" >&2; exit 2; }
  fi
  if [ "$install" = 1 ]; then "$LAB_SRC/install-deps.sh" || exit 1; fi
  build=${build:-$top/build}
  export LAB_BUILD=$build
  if [ ! -f "$LAB_BUILD/plugin/.libs/metastable.so" ] || [ ! -x "$LAB_BUILD/cli/metastable" ]; then
    echo "$name: build first ($LAB_BUILD/plugin/.libs/metastable.so, cli/metastable)" >&2
    exit 2
  fi
  out=${out:-$top/build/lab/${name%-lab}-$(date +%Y%m%d-%H%M%S)}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  results=${LAB_RESULTS:-$LAB_SRC/results.csv}
}

LATCHED_FOR=5
RECOVERED_FOR=5
SETTLE=3
DRAINS=2
STARVED=0.05 # the app took this much longer than it asked: inconclusive
DES_SEEDS=16 # seeds of the staircase in the DES (lab/des-staircase.py)
# The targets of issue 35, reported for every measured run: the measured
# tipping load within 5 % of the model's, the recovery load within 15 %,
# the storm flag against goodput (the truth over 3 s) in at most 3 % of
# the seconds, the learned service time at the run's end within 10 % of
# the truth (the one taken into use within 10 % + 2 standard errors, as
# the storm lab's lab/report.sh holds it).
TARGET_TIPPING=0.05 TARGET_RECOVERY=0.15 TARGET_FLAG=0.03 TARGET_LEARNED=0.10
STAIRS_FAILED=0
SLOW_TAIL=3  # s after the trigger its slow requests may still be served
CAP_SECONDS=10 # the capacity is judged on at least this many seconds

# step_up RATE SECS: one step of the staircase up; true when it latched
# (goodput under half of offered over its last LATCHED_FOR s together: a
# coarse client timer fires its timeouts in batches, and one second of a
# storm can then see most of its goodput; lab/des-staircase.py measures
# the DES by the same rule).
step_up() {
  local rate=$1 secs=$2 i g=() o=()
  lab_phase "up-$rate"
  lab_load "$rate" "$secs"
  for i in $(seq "$secs"); do
    lab_tick
    g+=("$LAB_GOODPUT")
    o+=("$LAB_OFFERED")
  done
  [ "$secs" -ge "$LATCHED_FOR" ] &&
    awk -v n="$LATCHED_FOR" -v g="${g[*]}" -v o="${o[*]}" 'BEGIN {
      k = split(g, gs, " "); split(o, os, " ")
      for (i = k - n + 1; i <= k; i++) { sg += gs[i]; so += os[i] }
      exit !(sg < 0.5 * so) }'
}

# step_down RATE SECS: one step down, ended early when it recovered (goodput
# at least 90 % of offered for RECOVERED_FOR s); true when it recovered.
# Leaves the step's load process in LAB_PID, and in STEP_DRAIN the change of
# the accept queue per second from SETTLE s into the step to its end.
step_down() {
  local rate=$1 secs=$2 i good=0 q0=""
  lab_phase "down-$rate"
  lab_load "$rate" "$secs"
  for i in $(seq "$secs"); do
    lab_tick
    [ "$i" = "$SETTLE" ] && q0=$LAB_QUEUE
    [ -n "$q0" ] && STEP_DRAIN=$(awk -v a="$q0" -v b="$LAB_QUEUE" -v n=$((i - SETTLE)) \
      'BEGIN { printf "%.1f", (n > 0 ? (b - a) / n : 0) }')
    if awk -v g="$LAB_GOODPUT" -v o="$LAB_OFFERED" 'BEGIN { exit !(o > 0 && g >= 0.9 * o) }'; then
      good=$((good + 1))
    else
      good=0
    fi
    if [ "$good" -ge "$RECOVERED_FOR" ]; then
      lab_log "recovered at $rate req/s after ${i}s"
      return 0
    fi
  done
  return 1
}

# finish NAME TIPPING RECOVERY BACK: stop everything, judge the run, append
# its line to the results.
finish() {
  local name=$1 tip=$2 rec=$3 back=$4 end
  end=$(date +%s.%N)
  declare -F stack_end >/dev/null && stack_end
  lab_phase end
  lab_ticks 2
  lab_stop_all
  read -r load1 _ </proc/loadavg
  report "$name" "$tip" "$rec" "$back" "$end"
  rm -rf "$out/$name/run"
  mv "$LAB_RUN" "$out/$name/run"
}

# stairs_calibration_time: the twin's calibration_time in SERVICE_FILE, in
# seconds ("120s" or "2m"; 300, the default, when the file gives none).
stairs_calibration_time() {
  awk -v twin="${SERVICE}_learned" '
    /^ *- name:/ { mine = ($3 == twin) }
    mine && /^ *calibration_time:/ { v = $2; m = v ~ /m$/ ? 60 : 1; sub(/[sm]$/, "", v)
                                     print v * m; found = 1; exit }
    END { if (!found) print 300 }' "$SERVICE_FILE"
}

# stairs_targets NAME TIPPING RECOVERY PREDICTED_TIPPING PREDICTED_RECOVERY
# FLAG3 SECONDS LEARNED TRUTH: one line, each target of the run measured
# against the model (the learned service time against the truth), "met" or
# "missed".
stairs_targets() {
  awk -v name="$1" -v tip="$2" -v rec="$3" -v ptip="$4" -v prec="$5" -v f="$6" -v n="$7" \
    -v learned="$8" -v truth="$9" -v tl="$TARGET_LEARNED" \
    -v tt="$TARGET_TIPPING" -v tr="$TARGET_RECOVERY" -v tf="$TARGET_FLAG" '
    function one(what, m, p, t) {
      if (m == "" || p == "") return what " unmeasured; "
      d = m / p - 1
      return sprintf("%s %+.1f %% (%s within %g %%); ", what, 100 * d,
        (d <= t && d >= -t) ? "met," : "MISSED,", 100 * t)
    }
    BEGIN {
      out = ""
      if (name == "staircase") out = one("tipping", tip, ptip, tt) one("recovery", rec, prec, tr)
      s = n > 0 ? f / n : 0
      out = out sprintf("flag %.1f %% of %d s over 3 s (%s at most %g %%); ", 100 * s, n,
        s <= tf ? "met," : "MISSED,", 100 * tf)
      out = out one("learned service time", learned, truth, tl)
      sub(/; $/, "", out)
      print out }'
}

# stairs_checks NAME TIPPING RECOVERY BACK DES_RANGE VERDICT END LATCHED:
# (LATCHED: how many of the DES's seeds latched) what the
# lab test holds the run to (--check), "passed" or "FAILED: why".  A run
# that is not "measured" is not checked.  The staircase: it latched and
# came back, and its tipping load, recovery load and goodput's return are
# inside the DES's range of the same staircase, widened by a step each
# way (the next load of the staircase below and above): the stack
# behaves as its algorithm does (a model miss shows as targets missed,
# not here).  The trigger: where the trigger made a storm (goodput under
# half the offered load 3 s in a row), the storm flag rose; where the end
# was healthy, the flag was down.
stairs_checks() {
  local name=$1 tip=$2 rec=$3 back=$4 des=$5 verdict=$6 end=$7 latched=${8:-} why=""
  if [ "$verdict" != measured ]; then
    echo "skipped (${verdict%%:*})"
    return
  fi
  inside() { # WHAT VALUE MIN MAX STEPS: VALUE within one of the STEPS'
    # loads of the DES's MIN..MAX (a run is one sample, the DES's seeds a few)
    [ "$3" = - ] || [ -z "$2" ] && return 0
    awk -v v="$2" -v a="$3" -v b="$4" -v steps="$5" 'BEGIN {
        n = split(steps, st, " "); lo = a; hi = b
        for (i = 1; i <= n; i++) { l = st[i]; sub(/:.*/, "", l); l += 0
          if (l < a && (lo == a || l > lo)) lo = l
          if (l > b && (hi == b || l < hi)) hi = l }
        exit !(v >= lo && v <= hi) }' ||
      why="$why $1 $2 more than a step outside the DES's $3..$4;"
  }
  if [ "$name" = staircase ]; then
    # a run that never latched fails where every seed of the DES did
    [ -n "$tip" ] || [ "$latched" != "$DES_SEEDS" ] ||
      why="$why never latched (every seed of the DES did);"
    [ -n "$back" ] || why="$why goodput never came back;"
    set -- $des
    if [ $# -eq 6 ]; then
      inside tipping "$tip" "$1" "$2" "$STEPS_UP"
      inside recovery "$rec" "$3" "$4" "$STEPS_DOWN"
      inside "goodput back at" "$back" "$5" "$6" "$STEPS_DOWN"
    else
      why="$why no DES range;"
    fi
  else
    # the truth from direct.txt: a storm after the trigger (3 s in a row
    # with goodput under half the offered load), healthy at the end
    # (goodput at least 90 % of offered over the last 5 s)
    local truth
    truth=$(awk -v phases="$LAB_RUN/phases" -v end="$end" '
      BEGIN { while ((getline l < phases) > 0) { split(l, f, " ")
                if (f[2] == "trigger") a = f[1]; if (f[2] == "final") b = f[1] } }
      $1 > a && $1 < b { run = $3 < 0.5 * $2 ? run + 1 : 0; if (run >= 3) storm = 1 }
      $1 <= end { n++; o[n] = $2; g[n] = $3 }
      END { for (k = n - 4; k <= n; k++) if (k > 0) { so += o[k]; sg += g[k] }
            print storm + 0, (so > 0 && sg >= 0.9 * so) ? 1 : 0 }' "$LAB_RUN/direct.txt")
    awk -v phases="$LAB_RUN/phases" -v end="$end" -v storm="${truth% *}" -v healthy="${truth#* }" '
      BEGIN { while ((getline l < phases) > 0) { split(l, f, " ")
                if (f[2] == "trigger") a = f[1]; if (f[2] == "final") b = f[1] } }
      $1 > a && $1 < b && $2 + 0 >= 0.5 { up = 1 }
      $1 <= end && $2 != "nan" { last = $2 + 0 }
      END { exit !((up || !storm) && (last < 0.5 || !healthy)) }' "$LAB_RUN/storm.txt" ||
      why="$why the storm flag did not rise after the trigger's storm or was still up at the healthy end;"
  fi
  if [ -n "$why" ]; then echo "FAILED:$why"; else echo passed; fi
}

# report NAME TIPPING RECOVERY BACK END: the run's summary and its picture
# (lab/plot-stairs.sh, OUT/NAME/STACK-NAME.png): the model's
# prediction (metastable solve), the measured loads (BACK: where goodput
# came back), the storm flag (from collectd's CSV files) against goodput <
# 90 % of offered (the lab's own reads, direct.txt) second by second, the
# app's service times, and the pool's completions per second while its
# queue held more than CAP_QUEUE (the capacity, LAB_POOL / LAB_SERVICE_TIME
# asked).
report() {
  local name=$1 tip=$2 rec=$3 back=$4 end=$5 pred ptip prec ftip frec flag stretch verdict run_s cap
  mkdir -p "$out/$name"
  pred=$("$LAB_BUILD/cli/metastable" solve --spec "$SERVICE_FILE" --service "$SERVICE")
  # the fold of the M/M/c/K landscape (the plugin's), and where the file
  # gives the clients' backoff the retrial queue's loads (retries soon
  # after a rejection, doc/design.md §1.9): the targets weigh the latter
  ftip=$(awk '/^tipping load/ { print $3 }' <<<"$pred")
  frec=$(awk '/^recovery load/ { print $3 }' <<<"$pred")
  ptip=$(awk '/^retrial loads/ && $3 == "tipping" { print $4 }' <<<"$pred")
  prec=$(awk '/^retrial loads/ && $6 == "recovery" { print $7 }' <<<"$pred")
  ptip=${ptip:-$ftip}
  prec=${prec:-$frec}
  # the storm flag: "epoch value" of every file collectd wrote
  cat "$LAB_RUN"/csv/"$LAB_HOST"/metastable-"$SERVICE"/storm-* 2>/dev/null |
    awk -F, 'NR > 0 && $1 ~ /^[0-9]/ { print $1, $2 }' | sort -n >"$LAB_RUN/storm.txt"
  # "disagree seconds", over the seconds before END with a flag and a load
  # "disagree seconds", over the seconds before END with a flag and a
  # load, against the second's own truth and against the truth of the 3 s
  # centred on it (goodput is counted at completion, offered at arrival:
  # a healthy second's goodput falls under 90 % by that alone)
  flag=$(awk -v end="$end" -v flags="$LAB_RUN/storm.txt" '
    BEGIN { while ((getline l < flags) > 0) { split(l, f, " "); n++; ft[n] = f[1]; fv[n] = f[2] } }
    $1 <= end { m++; t[m] = $1; o[m] = $2; g[m] = $3 }
    END {
      for (k = 1; k <= m; k++) {
        while (i < n && ft[i + 1] <= t[k]) i++
        if (i == 0 || o[k] <= 0 || fv[i] == "nan") continue
        up = fv[i] + 0 >= 0.5
        lo = k > 1 ? k - 1 : 1; hi = lo + 2 <= m ? lo + 2 : m
        so = sg = 0; for (j = lo; j <= hi; j++) { so += o[j]; sg += g[j] }
        secs++; if (up != (g[k] < 0.9 * o[k])) dis++; if (up != (sg < 0.9 * so)) dis3++
      }
      print dis + 0, secs + 0, dis3 + 0 }' "$LAB_RUN/direct.txt")
  flag3=${flag##* }
  flag=${flag% *}
  stretch=$(awk '{ a += $2; t += $3 } END { if (a > 0) printf "%.4f", t / a - 1; else print "nan" }' "$LAB_RUN/app.log")
  # the capacity: completions per second while the queue holds over
  # CAP_QUEUE, unmeasured on fewer than CAP_SECONDS such seconds,
  # but not during the trigger nor the SLOW_TAIL s after it, while its
  # slow requests (10 x 100 ms on average) still hold the workers
  cap=$(awk -v phases="$LAB_RUN/phases" -v tail="$SLOW_TAIL" -v cap_q="$CAP_QUEUE" -v CAP_SECONDS="$CAP_SECONDS" '
    BEGIN { while ((getline l < phases) > 0) { split(l, f, " ")
              if (f[2] == "trigger") a = f[1]; else if (a && !b) b = f[1] + tail } }
    $6 > cap_q && !(a && $1 > a && $1 <= b) { n++; c += $5 }
    END { if (n >= CAP_SECONDS) printf "%.1f", c / n; else print "" }' "$LAB_RUN/direct.txt")
  run_s=$(awk -v t0="$LAB_T0" -v e="$end" 'BEGIN { printf "%d", e - t0 }')
  if awk -v s="$stretch" -v m="$STARVED" 'BEGIN { exit !(s == "nan" || s > m) }'; then
    verdict="inconclusive: the app took ${stretch} longer than it asked (limit $STARVED), load average $load1"
  elif [ -n "$cap" ] && awk -v c="$cap" -v m="$STARVED" -v k="$LAB_POOL" -v s="$LAB_SERVICE_TIME" \
    'BEGIN { exit !(c < (1 - m) * k / s) }'; then
    verdict="inconclusive: $LAB_POOL_NAME completed $cap req/s with a full queue, under $(awk -v m="$STARVED" 'BEGIN { print 100 * (1 - m) }') % of the $LAB_POOL / $LAB_SERVICE_TIME s asked, load average $load1"
  else
    verdict="measured"
  fi
  # the staircase against the storm hazard: for each step up that ran,
  # the model's chance of a storm within the step, 1 - exp(-secs /
  # time_to_storm) at its load (metastable solve; from an empty pool,
  # doc/design.md §1.12), and the first load where it passes one half
  local steps="" half="" at_latch="" s h
  for s in $UP_RUN; do
    # "nan" where the model has no time to a storm (a timeout range)
    h=$("$LAB_BUILD/cli/metastable" solve --format json --spec "$SERVICE_FILE" \
      --service "$SERVICE" --load "${s%:*}" |
      python3 -c 'import json, math, sys
t = json.load(sys.stdin).get("time_to_storm")
print("nan" if t is None else "%.3f" % (-math.expm1(-float(sys.argv[1]) / t) if t else 0))' "${s#*:}")
    steps="$steps ${s%:*}:$h"
    [ -z "$half" ] && [ "$h" != nan ] && awk -v h="$h" 'BEGIN { exit !(h >= 0.5) }' && half=${s%:*}
    [ "${s%:*}" = "$tip" ] && [ "$h" != nan ] && at_latch=$h
  done
  # the staircase in the discrete-event simulation of the service file,
  # seed by seed, measured with the lab's rules (lab/des-staircase.py):
  # "TIP_MIN TIP_MAX REC_MIN REC_MAX BACK_MIN BACK_MAX", "-" for none
  local des_range="" des_latched="" des_line
  if [ "$name" = staircase ]; then
    lab_log "the staircase in the DES, $DES_SEEDS seeds"
    python3 "$LAB_SRC/des-staircase.py" "$LAB_BUILD/cli/metastable" "$SERVICE_FILE" \
      "$SERVICE" "$STEPS_UP" "$STEPS_DOWN" "$DES_SEEDS" >"$out/$name/des.txt" ||
      lab_log "the DES of the staircase failed: $out/$name/des.txt"
    des_line=$(awk '$1 == "range"' "$out/$name/des.txt")
    [ -n "$des_line" ] && des_range=$(cut -d' ' -f2-7 <<<"$des_line") &&
      des_latched=$(cut -d' ' -f8 <<<"$des_line")
  fi
  # calibration: the twin service ${SERVICE}_learned, its service time
  # wrong in the file, learns it; the plugin's INFO line says when it took
  # the learned value into use.  The truth: the mean time the pool's
  # requests took until then (app.log), the trigger's slow ones included.
  # At the end: the last service_time_estimate, against the mean of the
  # twin's calibration_time before it (the window the estimate averages).
  local learned="" learned_se="" truth="" line t_use learned_end="" truth_end="" t_end window
  window=$(stairs_calibration_time)
  line=$(grep -m1 "service \"${SERVICE}_learned\": learned service time" "$LAB_RUN/collectd.log")
  if [ -n "$line" ]; then
    read -r learned learned_se < <(sed -nE 's/.*learned service time ([0-9.eE+-]+) ms ± ([0-9.eE+-]+) ms.*/\1 \2/p' <<<"$line")
    t_use=$(sed -E 's/^\[([^]]*)\].*/\1/' <<<"$line" | { read -r d && date -d "$d" +%s; })
    truth=$(awk -v t="$t_use" '$1 <= t { n++; s += $3 } END { if (n) printf "%.1f", 1000 * s / n }' "$LAB_RUN/app.log")
  fi
  read -r learned_end t_end < <(cat "$LAB_RUN/csv/$LAB_HOST/metastable-${SERVICE}_learned"/service_time_estimate-* 2>/dev/null |
    awk -F, '$1 ~ /^[0-9]/ && $2 != "nan" { t = $1; v = $2 } END { if (t) printf "%.1f %d\n", 1000 * v, t }')
  [ -n "$learned_end" ] && truth_end=$(awk -v t="$t_end" -v w="$window" \
    '$1 <= t && $1 > t - w { n++; s += $3 } END { if (n) printf "%.1f", 1000 * s / n }' "$LAB_RUN/app.log")
  local targets checks
  # a storm that ends within SETTLE s of a step drains no step: then where
  # goodput came back is the recovery load the targets weigh
  targets=$(stairs_targets "$name" "$tip" "${rec:-$back}" "$ptip" "$prec" "$flag3" "${flag#* }" "$learned_end" "$truth_end")
  checks=$(stairs_checks "$name" "$tip" "$rec" "$back" "$des_range" "$verdict" "$end" "$des_latched")
  case $checks in FAILED*) STAIRS_FAILED=1 ;; esac
  {
    echo "$STACK lab, run $name ($(date -u +%FT%TZ))"
    if [ "$ptip $prec" = "$ftip $frec" ]; then
      echo "model: tipping $ptip req/s, recovery $prec req/s (metastable solve --spec $(basename "$SERVICE_FILE"))"
    else
      echo "model: tipping $ptip req/s, recovery $prec req/s (the retrial queue with the clients' backoff, metastable solve --spec $(basename "$SERVICE_FILE")); the plugin's M/M/c/K fold: tipping $ftip, recovery $frec req/s"
    fi
    echo "measured: tipping ${tip:-none} req/s, recovery (the queue drains) ${rec:-none} req/s, goodput back at ${back:-none} req/s"
    [ -n "$steps" ] && echo "model's storm hazard within each step up (load:hazard):$steps; passes 1/2 at ${half:-no step} req/s, latched at ${tip:-none}"
    echo "storm flag vs goodput < 90 % of offered: disagree ${flag% *} of ${flag#* } s (over the 3 s around each second: $flag3)"
    echo "app: took/asked - 1 = $stretch over $(wc -l <"$LAB_RUN/app.log") requests; capacity with a full queue ${cap:-unmeasured} req/s; load average (1 min) $load1"
    [ -n "$des_range" ] && echo "the DES of this staircase ($DES_SEEDS seeds, $des_latched latched): tipping ${des_range%% *}..$(cut -d' ' -f2 <<<"$des_range"), recovery (the queue drains) $(cut -d' ' -f3 <<<"$des_range")..$(cut -d' ' -f4 <<<"$des_range"), goodput back $(cut -d' ' -f5 <<<"$des_range")..$(cut -d' ' -f6 <<<"$des_range") req/s"
    echo "calibration: ${SERVICE}_learned took ${learned:-nothing} ± ${learned_se:-?} ms into use, the truth until then ${truth:-unmeasured} ms$(
      [ -n "$learned" ] && [ -n "$truth" ] && awk -v l="$learned" -v e="$learned_se" -v t="$truth" -v tl="$TARGET_LEARNED" 'BEGIN {
        d = l / t - 1; printf " (%+.1f %%, %s 10 %% + 2 standard errors)", 100 * d, (d <= tl + 2 * e / t && d >= -tl - 2 * e / t) ? "within" : "OUTSIDE" }'
      ); at the end ${learned_end:-nothing} ms, the truth over its last $window s ${truth_end:-unmeasured} ms"
    declare -F stack_report >/dev/null && stack_report
    echo "targets: $targets"
    echo "checks: $checks"
    echo "verdict: $verdict"
  } | tee "$out/$name/summary.txt" >&2
  local des_csv=,,,,,
  [ -n "$des_range" ] && des_csv=$(awk -v OFS=, '{ for (i = 1; i <= NF; i++) if ($i == "-") $i = ""; $1 = $1; print }' <<<"$des_range")
  [ -f "$results" ] || echo "stack,run,predicted_tipping,measured_tipping,predicted_recovery,measured_recovery,goodput_back,flag_disagree_s,flag_s,run_s,load_avg,service_stretch,capacity,verdict,date,hazard_half_load,hazard_at_latch,flag_disagree_3s_s,des_tipping_min,des_tipping_max,des_recovery_min,des_recovery_max,des_back_min,des_back_max,checks,learned_service_ms,true_service_ms,learned_end_ms,true_end_ms,fold_tipping,fold_recovery" >"$results"
  echo "$STACK,$name,$ptip,${tip:-},$prec,${rec:-},${back:-},${flag% *},${flag#* },$run_s,$load1,$stretch,${cap:-},${verdict%%:*},$(date -u +%FT%TZ),${half:-},${at_latch:-},$flag3,$des_csv,$checks,$learned,$truth,$learned_end,$truth_end,$ftip,$frec" >>"$results"
  "$LAB_SRC/plot-stairs.sh" "$LAB_RUN" "$STACK lab, $name ($(date -u +%F))" "$ptip" "$prec" \
    "$out/$name/$STACK-$name.png" || lab_log "no picture of the run (gnuplot?)"
}

run_staircase() {
  local s tip="" rec="" back="" pid=""
  lab_new_run staircase
  start_servers
  start_collectd
  UP_RUN=""
  for s in $STEPS_UP; do
    UP_RUN="$UP_RUN $s"
    if step_up "${s%:*}" "${s#*:}"; then
      tip=${s%:*}
      lab_log "latched at $tip req/s"
      break
    fi
  done
  if [ -n "$tip" ]; then
    for s in $STEPS_DOWN; do
      [ "${s%:*}" -lt "$tip" ] || continue
      STEP_DRAIN=0
      if step_down "${s%:*}" "${s#*:}"; then
        back=${s%:*}
        pid=$LAB_PID
      fi
      if [ -z "$rec" ] && awk -v d="${STEP_DRAIN:-0}" -v m="$DRAINS" 'BEGIN { exit !(d + 0 < -m) }'; then
        rec=${s%:*}
        lab_log "the queue drains at $rec req/s ($STEP_DRAIN per s)"
      fi
      [ -n "$back" ] && break
    done
  fi
  [ -n "$pid" ] && lab_stop "$pid"
  finish staircase "$tip" "$rec" "$back"
}

run_trigger() {
  local pid back=""
  UP_RUN=""
  lab_new_run trigger
  start_servers
  start_collectd
  lab_phase healthy
  lab_load "$RATE" $((HEALTHY + TRIGGER + HOLD))
  lab_ticks "$HEALTHY"
  lab_phase trigger
  lab_trigger "$FACTOR"
  lab_ticks "$TRIGGER"
  lab_trigger 1
  lab_phase storm
  lab_ticks "$HOLD"
  step_down "$DRAIN_RATE" "$DRAIN_MAX" && back=$DRAIN_RATE
  pid=$LAB_PID
  lab_phase final
  lab_load "$RATE" $((FINAL + 2))
  [ -n "$pid" ] && lab_stop "$pid"
  lab_ticks "$FINAL"
  finish trigger "" "" "$back"
}

# stairs_main: each run of $runs, then the lab's base directory goes.
stairs_main() {
  local r
  lab_log "reports in $out; run directories in $LAB_BASE"
  for r in $runs; do
    case $r in
    staircase) run_staircase ;;
    trigger) run_trigger ;;
    *) lab_die "unknown run $r" ;;
    esac
  done
  rm -f "$LAB_BASE/pids"
  rmdir "$LAB_BASE" 2>/dev/null
  lab_log "done: summaries in $out, results in $results"
  if [ "${check:-0}" = 1 ] && [ "$STAIRS_FAILED" = 1 ]; then
    lab_log "a check failed (checks: in the summaries)"
    exit 1
  fi
}
