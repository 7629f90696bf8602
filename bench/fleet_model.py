"""The fleet benchmark's cost model (bench/fleet_bench.py): fitted on N <= 2, it predicts larger
fleets before they are measured and prints its predictions beside the measurements."""


def fit_model(cases, rate_mbit, seconds):
    """The cost model: a server link carries s(N) bytes per seed, the batches' own bytes s1 plus
    what servers exchange, which grows with the share of a batch's nodes another server owns,
    (N - 1) / N; links run at the efficiency measured at N = 1. Fitted on N <= 2 of one fair-send
    mode; returns (predict(n, w) -> (seeds/s, MB per server link), the fitted constants) or None."""
    by = {(c["n"], c["w"]): c for c in cases}
    one = next((c for (n, w), c in sorted(by.items()) if n == 1), None)
    two = next((c for (n, w), c in sorted(by.items()) if n == 2), None)
    if one is None or two is None:
        return None
    per_seed = lambda c: c["server_tx"] / (c["seeds_s"] * seconds)  # noqa: E731  (all server links)
    s1 = per_seed(one)
    x2 = max(0.0, per_seed(two) - s1)  # exchanged bytes per seed at N = 2, where (N - 1) / N = 1/2
    t1 = sum(one["links"][one["n"] + r][0] for r in range(one["w"])) / (one["seeds_s"] * seconds)
    rate = rate_mbit * 1e6 / 8
    eff = one["seeds_s"] * s1 / rate  # a server link's useful fraction, from N = 1

    def predict(n, w, seeds=None):
        """seeds/s, and MB a server link carries in `seconds` at `seeds` (default: predicted)."""
        s = s1 + 2 * x2 * (n - 1) / n
        servers = n * eff * rate / s            # every server link full
        trainers = w * eff * rate / t1          # every trainer link full
        rate_seeds = min(servers, trainers)
        return rate_seeds, (seeds or rate_seeds) * seconds * s / n / 1e6

    return predict, {"s1": s1, "x2": x2, "t1": t1, "eff": eff}


def print_model(cases, rate_mbit, seconds, fair):
    fitted = fit_model([c for c in cases if c["fair_send"] == fair], rate_mbit, seconds)
    if fitted is None:
        return
    predict, k = fitted
    print(f"cost model, fair send {'on' if fair else 'off'} (fitted on N <= 2): {k['s1']:,.0f} B a seed on a "
          f"server link at N = 1, +{k['x2']:,.0f} B between servers at N = 2 (x 2(N-1)/N beyond), "
          f"{k['t1']:,.0f} B a seed on a trainer link, links {100 * k['eff']:.0f} % useful")
    for c in cases:
        if c["fair_send"] != fair or c["n"] <= 2:
            continue
        seeds, _ = predict(c["n"], c["w"])
        _, mb = predict(c["n"], c["w"], c["seeds_s"])  # the bytes of the seeds measured
        links = [c["links"][k][1] / 1e6 for k in range(c["n"])]
        print(f"    N={c['n']} W={c['w']}: predicted {seeds:,.0f} seeds/s, measured {c['seeds_s']:,.0f} "
              f"({c['seeds_s'] / seeds:.2f}x); a server link {mb:,.0f} MB for those seeds, measured "
              f"{min(links):,.0f}-{max(links):,.0f} MB ({min(links) / mb:.2f}-{max(links) / mb:.2f}x)")
    for n in (16, 64):
        seeds, _ = predict(n, n)
        print(f"    N={n} W={n}: predicted {seeds:,.0f} seeds/s ({seeds / predict(1, 1)[0]:.1f}x N=1 W=1)")
