"""Fit the serving power model's two constants on the development rows of
``validation/serving_energy.csv`` (ML.ENERGY Leaderboard v3: dense 16-bit models on H100).

    PYTHONPATH=src python scripts/calibrate_serving_power.py

P = P_idle + (TDP - P_idle) x min(1, a + b x u_tensor) (``model/serving_power.py``): a grid
over a (active floor) and b (tensor weight) minimising the mean absolute percentage error of
the power per GPU. The step model's busy fractions do not depend on a and b, so they are
computed once per row. Prints the best point, the alternative with an HBM term instead of
the floor (a x u_hbm + b x u_tensor) for comparison, and the MAPE of each on the dev rows
only. Held-out rows are never scored here. The catalog is not changed: copy the point into
``assumptions.yaml`` (``serving_power_active_floor``, ``serving_power_tensor_weight``).
"""

from __future__ import annotations

import numpy as np

from clusterwright.catalog.registry import load_catalog
from clusterwright.plan.energy import power_params
from clusterwright.validation.rows import read_csv
from clusterwright.validation.serving_energy_table import FILE, predict_row

FLOORS = np.round(np.arange(0.0, 1.0001, 0.01), 2)
WEIGHTS = np.round(np.arange(0.0, 3.0001, 0.01), 2)


def main() -> None:
    cat = load_catalog(env={})
    rows = [r for r in read_csv(FILE) if (r["set"] or "dev") == "dev"]
    ut, um, idle, tdp, meas = [], [], [], [], []
    for r in rows:
        pt = predict_row(cat, r).point
        p = power_params(cat, r["gpu"])
        ut.append(pt.tensor_busy)
        um.append(pt.hbm_busy)
        idle.append(p.idle_w)
        tdp.append(p.tdp_w)
        meas.append(float(r["power_w_per_gpu"]))
    u_t, u_m, lo, hi, m = (np.array(x) for x in (ut, um, idle, tdp, meas))
    # Time-weighted busy fractions stand in for the per-iteration ones: exact when the cap
    # does not bind in any iteration, which the table's own prediction does not assume.
    for name, second in (("floor + tensor", np.ones_like(u_t)), ("hbm + tensor", u_m)):
        a = FLOORS[:, None, None]
        b = WEIGHTS[None, :, None]
        act = np.clip(a * second + b * u_t, 0.0, 1.0)
        err = np.abs((lo + (hi - lo) * act) / m - 1.0).mean(axis=2)
        i, j = np.unravel_index(np.argmin(err), err.shape)
        print(f"{name}: a = {FLOORS[i]:.2f}, b = {WEIGHTS[j]:.2f}, dev power MAPE "
              f"{100 * err[i, j]:.1f} % on {len(rows)} rows")


if __name__ == "__main__":
    main()
