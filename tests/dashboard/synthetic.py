#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write an hour of synthetic collectd-metastable series as OpenMetrics.

    synthetic.py [--minutes 60] [--step 15] [--end UNIX_TIME] > metrics.om
    promtool tsdb create-blocks-from openmetrics metrics.om DATA_DIR

The series are named and labelled as Prometheus stores collectd's
write_prometheus output when the scrape sets honor_labels: true
(collectd_metastable_<type>{instance="<host>", job, metastable="<service>"}),
so the dashboard's queries can be run against a real Prometheus before the
plugin feeds one.  The numbers are not the model's; they only have its
shape:

  web1/checkout  healthy inside the hysteresis band, a burst tips it into a
                 storm (overloaded), the burst ends and the storm sustains
                 itself (metastable), load is shed: the model says stable but
                 the backlog still fails (the drain window: storm and
                 recovering 1, drain_time counting down), then it recovers;
                 observed attempt rate and failure ratio present, and
                 calibration: the service time measured (52 ms against the
                 file's 100 ms, known better as the samples grow), the
                 base failure learned, the model's failure ratio at the
                 observed attempts and the residual (noise outside storms,
                 large in them);
  web1/search    stable throughout, no observations (so no calibration and
                 no residual);
  every service  time_to_storm and storm_hazard, shorter and higher as
                 the load nears its tipping load;
  web2/db.main   vulnerable throughout, no observations;
  web2/payments  tips into a storm half-way and is left metastable at the
                 end, so that a Prometheus loading conf/metastable-alerts.yml
                 has storm alerts pending at once.
"""

import argparse
import time

TYPES = ["offered_load", "effective_load", "self_inflicted_load", "amplification",
         "failure_probability", "utilization", "tipping_load", "recovery_load",
         "tipping_distance", "tipping_headroom", "equilibria", "state", "storm",
         "observed_effective_load", "observed_failure_ratio", "shed_load",
         "recovering", "drain_time", "time_to_storm", "storm_hazard",
         "service_time_estimate",
         "service_time_error", "service_time_ratio", "base_failure_estimate",
         "calibrated", "model_failure_ratio", "model_residual", "reporting"]


def sample(service, f):
    """Values at fraction f (0..1) of the window, or None when absent."""
    drain = False
    if service == "checkout":
        tip, rec, capacity = 80.0, 25.0, 100.0
        if f < 1 / 3:
            lam, state, amp, p = 50.0, 1, 1.01, 0.01
        elif f < 1 / 2:
            lam, state, amp, p = 90.0, 3, 4.0, 0.98
        elif f < 3 / 4:
            lam, state, amp, p = 60.0, 2, 4.0, 0.97
        else:
            lam, state, amp, p = 20.0, 0, 1.005, 0.005
        drain = 3 / 4 <= f < 5 / 6
    elif service == "payments":
        tip, rec, capacity = 80.0, 25.0, 100.0
        if f < 1 / 2:
            lam, state, amp, p = 50.0, 1, 1.01, 0.01
        elif f < 2 / 3:
            lam, state, amp, p = 90.0, 3, 4.0, 0.98
        else:
            lam, state, amp, p = 60.0, 2, 4.0, 0.97
    elif service == "search":
        tip, rec, capacity = 400.0, 120.0, 500.0
        lam, state, amp, p = 100.0, 0, 1.0, 0.001
    else:
        tip, rec, capacity = 50.0, 10.0, 60.0
        lam, state, amp, p = 30.0, 1, 1.02, 0.02
    x = lam * amp
    v = {"offered_load": lam, "effective_load": x, "self_inflicted_load": x - lam,
         "amplification": amp, "failure_probability": p, "utilization": x / capacity,
         "tipping_load": tip, "recovery_load": rec, "tipping_distance": tip - lam,
         "tipping_headroom": (tip - lam) / tip, "equilibria": 3 if rec <= lam <= tip else 1,
         "state": state, "storm": 1 if state >= 2 else 0, "recovering": 0,
         "reporting": 1}
    if service == "checkout":
        v["observed_effective_load"] = x * 1.03
        v["observed_failure_ratio"] = min(1.0, p * 1.05)
        if drain:
            # The drain window: the model says stable, the backlog still
            # fails; the evidence-based storm flag stays up.
            v["storm"] = v["recovering"] = 1
            v["observed_failure_ratio"] = 0.9
            v["drain_time"] = round(3600 * (5 / 6 - f), 1)
        # Calibration: busy_servers and completion_rate give the service
        # time from the second interval on, its error shrinking with the
        # samples; calibrate: [service_time, base_failure] uses both.
        if f > 0:
            v["service_time_estimate"] = 0.052
            v["service_time_error"] = round(0.01 / (1 + 40 * f), 5)
            v["service_time_ratio"] = 0.52
            v["base_failure_estimate"] = 0.0102
            v["calibrated"] = 2 if f > 0.05 else 0
        v["model_failure_ratio"] = p
        v["model_residual"] = 9.0 if v["storm"] else round(0.8 * ((7 * f * 60) % 3 - 1.5), 2)
    # The storm hazard within an hour: from the mean time to a storm,
    # shorter as the load nears the tipping load; never (1e300 s, hazard
    # 0) below the recovery load.
    if lam < rec:
        v["time_to_storm"], v["storm_hazard"] = 1e300, 0.0
    else:
        t = 3600 * 10 ** (4 * max(tip - lam, 0) / tip)
        v["time_to_storm"] = round(t, 1)
        v["storm_hazard"] = round(1 - 2.718281828 ** (-3600 / t), 4)
    # In a storm: offered minus recovery load, and a little more for the
    # backlog while draining (always > 0); 0 without one.
    v["shed_load"] = max(lam - rec, 2.0) if v["storm"] else 0.0
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--step", type=float, default=15)
    ap.add_argument("--end", type=float, default=None)
    a = ap.parse_args()
    end = int(a.end if a.end is not None else time.time()) - 1
    n = int(a.minutes * 60 / a.step)
    times = [end - (n - i) * a.step for i in range(n + 1)]
    services = [("web1", "checkout"), ("web1", "search"), ("web2", "db.main"),
                ("web2", "payments")]
    out = []
    for t in TYPES:
        name = f"collectd_metastable_{t}"
        out.append(f"# TYPE {name} gauge")
        for host, svc in services:
            labels = f'{{instance="{host}",job="collectd",metastable="{svc}"}}'
            for i, ts in enumerate(times):
                v = sample(svc, i / n)
                if t in v:
                    out.append(f"{name}{labels} {v[t]:g} {ts:.3f}")
    out.append("# EOF")
    print("\n".join(out))


if __name__ == "__main__":
    main()
