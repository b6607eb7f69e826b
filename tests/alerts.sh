#!/bin/sh
# SPDX-License-Identifier: MIT
# Prometheus alert rules (conf/metastable-alerts.yml): syntax, the example
# scrape configuration, promtool unit tests for every alert
# (tests/alerts/metastable-alerts.test.yml), and the example Alertmanager
# routing (conf/alertmanager.yml).  Then breaks the rules in ways
# the unit tests must notice, one at a time, and fails if one goes unnoticed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/tests/require.sh"
ms_require alerts promtool amtool awk diff

promtool check rules "$top/conf/metastable-alerts.yml"
promtool check config "$top/conf/prometheus.yml"
promtool check config "$top/conf/prometheus-global.yml"
promtool test rules "$top/tests/alerts/metastable-alerts.test.yml"

# The Alertmanager example: valid, and every alert reaches the receiver its
# severity asks for.
amtool check-config "$top/conf/alertmanager.yml"
[ "$(grep -c 'severity: page$' "$top/conf/metastable-alerts.yml")" -eq 9 ] &&
  [ "$(grep -c 'severity: ticket$' "$top/conf/metastable-alerts.yml")" -eq 6 ] || {
  echo "alerts: the rules' severities changed: update the routing checks below" >&2
  exit 1
}
for route in MetastableRetryStorm:page:pager MetastableFailure:page:pager \
  MetastableAttemptsFailing:page:pager MetastableAboveTippingLoad:page:pager \
  MetastableTippingPointNear:page:pager MetastableTippingPointNear:ticket:tickets \
  MetastableRetryPolicyDangerous:ticket:tickets MetastableNotReporting:page:pager \
  MetastableNotReporting:ticket:tickets MetastableModelMisfit:ticket:tickets \
  MetastableStormHazard:ticket:tickets \
  MetastableAbsent:page:pager MetastableShardDown:page:pager \
  MetastableShardsMissing:page:pager MetastableShardTwice:ticket:tickets; do
  alert=${route%%:*}
  receiver=${route##*:}
  severity=${route#*:}
  severity=${severity%:*}
  amtool config routes test --config.file="$top/conf/alertmanager.yml" \
    --verify.receivers="$receiver" alertname="$alert" severity="$severity" \
    instance=web1 metastable=checkout >/dev/null 2>&1 || {
    echo "alerts: $alert ($severity) is not routed to $receiver" >&2
    exit 1
  }
  echo "alerts: ok, $alert ($severity) goes to $receiver"
done

# Mutants: each edit changes one alert's behaviour; the unit tests must fail.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/conf" "$work/tests/alerts"
rules=$top/conf/metastable-alerts.yml
mutant=$work/conf/metastable-alerts.yml

# The unit tests' groups, each in a file of its own after the file's
# header (rule_files, evaluation_interval).  promtool evaluates every group
# on its own, so the file fails exactly when one of its groups does: a
# mutant is rejected at its first failing group, tried first among the
# groups that name what it changed.  Each group passes alone first.
groups=$work/tests/alerts
awk -v dir="$groups" '
  /^  - name: / { if (file) close(file); n++
                  file = sprintf("%s/group%03d.yml", dir, n)
                  printf "%s", head > file }
  !n { head = head $0 "\n"; next }
  { print > file }' "$top/tests/alerts/metastable-alerts.test.yml"
cp "$rules" "$mutant"
for g in "$groups"/group*.yml; do
  promtool test rules "$g" >/dev/null 2>&1 || {
    echo "alerts: FAIL: the test group '$(sed -n 's/^  - name: //p' "$g")' fails on its own" >&2
    exit 1
  }
done

# The alerts and records whose rules the mutant changed, one a line: the
# rule around each line diff reports.
changed_rules() {
  diff "$rules" "$mutant" |
    sed -n 's/^\([0-9][0-9]*\)\(,\([0-9]*\)\)\{0,1\}[acd].*/\1 \3/p' |
    awk -v rules="$rules" '
      { lo[NR] = $1; hi[NR] = ($2 == "" ? $1 : $2) }
      END {
        while ((getline line < rules) > 0) {
          i++
          if (match(line, /- (alert|record): /))
            name = substr(line, RSTART + RLENGTH)
          for (k = 1; k <= NR; k++)
            if (i >= lo[k] && i <= hi[k] && name != "") print name
        }
      }' | sort -u
}

# The name of the first test group that fails with the mutant, or nothing
# (and status 1) when every group passes.
rejecting_group() {
  tried=""
  first=$(changed_rules | while read -r name; do
    grep -l -F -e "$name" "$groups"/group*.yml; done | sort -u)
  for g in $first "$groups"/group*.yml; do
    case " $tried " in *" $g "*) continue ;; esac
    tried="$tried $g"
    promtool test rules "$g" >/dev/null 2>&1 ||
      { sed -n 's/^  - name: //p' "$g"; return 0; }
  done
  return 1
}

survivors=0
n=0
while IFS='|' read -r what edit; do
  [ -n "$what" ] || continue
  n=$((n + 1))
  sed "$edit" "$rules" >"$mutant"
  if cmp -s "$rules" "$mutant"; then
    echo "alerts: mutant '$what' does not apply (sed $edit): update tests/alerts.sh" >&2
    survivors=$((survivors + 1))
  elif group=$(rejecting_group); then
    echo "alerts: ok, unit tests reject: $what (test group '$group')"
  else
    echo "alerts: FAIL: the unit tests accept a broken rule: $what" >&2
    survivors=$((survivors + 1))
  fi
done <<'MUTANTS'
storm alert without its minute|s/^        for: 1m$/        for: 0m/
storm counted over 10 minutes|s/avg_over_time(collectd_metastable_storm\[5m\]) > 0.4/avg_over_time(collectd_metastable_storm[10m]) > 0.4/
storm as an unbroken run (flapping never pages)|s/avg_over_time(collectd_metastable_storm\[5m\]) > 0.4/min_over_time(collectd_metastable_storm[5m]) > 0.4/
storm at 30 % of the window|s/avg_over_time(collectd_metastable_storm\[5m\]) > 0.4/avg_over_time(collectd_metastable_storm[5m]) > 0.3/
storm alert on any storm value|s/avg_over_time(collectd_metastable_storm\[5m\]) > 0.4/avg_over_time(collectd_metastable_storm[5m]) >= 0/
metastable, latch and not-reporting alerts after 1m instead of 2m|s/^        for: 2m$/        for: 1m/
metastable alert also when overloaded|s/state == 2/state >= 2/
tipping-point alert also during a storm|/and avg_over_time(collectd_metastable_storm\[5m\]) <= 0.4/d
tipping-point page at 15 % instead of 10 %|s/tipping_headroom < 0.1$/tipping_headroom < 0.15/
tipping-point ticket at 10 % instead of 20 %|s/tipping_headroom < 0.2$/tipping_headroom < 0.1/
tipping-point page after 15m|s/^        for: 5m$/        for: 15m/
vulnerable alert also when metastable|s/state == 1$/state >= 1/
vulnerable alert after 20m|s/for: 30m/for: 20m/
metastable summary quotes the tipping load, not the recovery load|s/with printf "collectd_metastable_recovery_load/with printf "collectd_metastable_tipping_load/
page downgraded to ticket|0,/severity: page/s//severity: ticket/
storm page resolves while most attempts still fail|s/^\(              avg_over_time(collectd_metastable_observed_failure_ratio\[5m\])\) > 0.5$/\1 > 0.7/
storm page held by failures only 5 minutes after the flag|0,/storm\[15m\]/s//storm[5m]/
storm page on failures without any storm flag|s/^              max_over_time(collectd_metastable_storm\[15m\]) == 1$/              max_over_time(collectd_metastable_storm[15m]) >= 0/
storm summary ignores the drain window|s/collectd_metastable_recovering" \$sel " == 1/collectd_metastable_recovering" $sel " == 2/
storm summary without the drain time|s/drains in {{ . | first | value | printf "%.0f" }} s/drains in {{ . | first | value | printf "%.1f" }} s/
storm text without the load to shed|s/collectd_metastable_shed_load" \$sel " > 0"/collectd_metastable_shed_load" $sel " > 100"/
failing-attempts page at 40 %|s/^\(          avg_over_time(collectd_metastable_observed_failure_ratio\[5m\])\) > 0.5$/\1 > 0.4/
failing-attempts page also just after a storm|s/^          max_over_time(collectd_metastable_storm\[15m\]) == 1$/          max_over_time(collectd_metastable_storm[5m]) == 1/
latch page also in a storm|s/collectd_metastable_storm == 0$/collectd_metastable_storm >= 0/
latch page while the storm page counts a storm|s/^          avg_over_time(collectd_metastable_storm\[5m\]) <= 0.4$/          avg_over_time(collectd_metastable_storm[5m]) <= 1/
latch page after 3 minutes|/alert: MetastableAboveTippingLoad/,/for:/s/for: 2m/for: 3m/
not-reporting after 5 minutes of silence instead of 3|s/> 180$/> 300/
not-reporting ignores reporting = 0|s/max_over_time(collectd_metastable_reporting\[3m\]) == 0$/max_over_time(collectd_metastable_reporting[3m]) == 2/
not-reporting on a single minute of reporting = 0|s/collectd_metastable_reporting\[3m\]/collectd_metastable_reporting[1m]/
not-reporting page whatever the last storm flag|s/last_over_time(collectd_metastable_storm\[7d\]) == 1$/last_over_time(collectd_metastable_storm[7d]) >= 0/
not-reporting forgets after an hour|s/reporting:timestamp\[7d\]/reporting:timestamp[1h]/
not-reporting severity forgets the storm after an hour|s/last_over_time(collectd_metastable_storm\[7d\])/last_over_time(collectd_metastable_storm[1h])/
nothing-at-all page after 5m|s/for: 10m/for: 5m/
storm hazard ticket at 0.7|s/storm_hazard\[15m\]) > 0.5$/storm_hazard[15m]) > 0.7/
storm hazard ticket on the last sample only|s/avg_over_time(collectd_metastable_storm_hazard\[15m\])/collectd_metastable_storm_hazard/
storm hazard ticket also past the tipping load|s/collectd_metastable_state < 3$/collectd_metastable_state < 4/
storm hazard ticket after 10m|/alert: MetastableStormHazard/,/for:/s/for: 15m/for: 10m/
storm hazard as a page|/alert: MetastableStormHazard/,/severity:/s/severity: ticket/severity: page/
misfit at 5 instead of 4|s/model_residual\[5m\])) > 4$/model_residual[5m])) > 5/
misfit at 3 instead of 4|s/model_residual\[5m\])) > 4$/model_residual[5m])) > 3/
misfit on the residual of one interval|s/abs(avg_over_time(collectd_metastable_model_residual\[5m\]))/abs(collectd_metastable_model_residual)/
misfit averaged over 1 minute|s/model_residual\[5m\]/model_residual[1m]/g
misfit only when more fail than predicted|s/abs(avg_over_time(collectd_metastable_model_residual\[5m\])) > 4/avg_over_time(collectd_metastable_model_residual[5m]) > 4/
misfit also in storms|s/max_over_time(collectd_metastable_storm\[15m\]) > 0$/max_over_time(collectd_metastable_storm[15m]) > 1/
misfit 5 minutes after a storm|s/max_over_time(collectd_metastable_storm\[15m\]) > 0$/max_over_time(collectd_metastable_storm[5m]) > 0/
misfit after 10m|/alert: MetastableModelMisfit/,/for:/s/for: 15m/for: 10m/
misfit as a page|/alert: MetastableModelMisfit/,/severity:/s/severity: ticket/severity: page/
misfit text with the sign turned|s/{{ if gt $value 0.0 }}more{{ else }}fewer{{ end }}/{{ if lt $value 0.0 }}more{{ else }}fewer{{ end }}/
misfit text with a wrong configured service time|s# / collectd_metastable_service_time_ratio"# * collectd_metastable_service_time_ratio"#
shard down after 5 minutes of silence instead of 3|s/shard:timestamp\[1h\]) > 180,/shard:timestamp[1h]) > 300,/
shard down forgets after 10 minutes|s/shard:timestamp\[1h\]/shard:timestamp[10m]/
shard down remembers a day|s/shard:timestamp\[1h\]/shard:timestamp[1d]/
shard down per host, not per shard|s/max by (type) (timestamp(collectd_metastable_shard_services))/max by (type, instance) (timestamp(collectd_metastable_shard_services))/
shard down without its 2 minutes|/alert: MetastableShardDown/,/for:/s/for: 2m/for: 0m/
shards missing counts a shard silent for 10 minutes|s/shard_services) >= time() - 180))/shard_services) >= time() - 600))/
shards missing also when all report|s/^          < max(last_over_time(collectd_metastable_shard_count\[1h\]))$/          <= max(last_over_time(collectd_metastable_shard_count[1h]))/
shards missing after 10m|/alert: MetastableShardsMissing/,/for:/s/for: 5m/for: 10m/
shard twice also for a shard reported once|s/shard_services) >= time() - 180) > 1,/shard_services) >= time() - 180) > 0,/
shard twice without its 10 minutes|/alert: MetastableShardTwice/,/for:/s/for: 10m/for: 0m/
shard twice as a page|/alert: MetastableShardTwice/,/severity:/s/severity: ticket/severity: page/
MUTANTS
[ "$survivors" -eq 0 ] || exit 1
echo "alerts: all $n mutants rejected"
