#!/usr/bin/env python3
"""Plots batch-build throughput against batch size and arity, cairn against
rotortree, from the CSV written by the peer comparison:

    cargo run --release -p cairn-bench --bin peers -- --csv docs/peers.csv
    python3 scripts/plot_throughput.py docs/peers.csv docs/throughput.svg

Plain SVG written by hand, so the script needs nothing beyond Python 3.
"""
import csv
import math
import sys

COLORS = {2: "#1b9e77", 4: "#d95f02", 8: "#7570b3", 16: "#e7298a"}
WIDTH, HEIGHT = 760, 460
LEFT, RIGHT, TOP, BOTTOM = 70, 190, 40, 60


def main(source, target):
    rows = [r for r in csv.DictReader(open(source)) if r["workload"] == "build"]
    series = {}
    for r in rows:
        arity, count = int(r["arity"]), int(r["leaves"])
        for who in ("cairn", "rotortree"):
            ms = float(r[f"{who}_ms"])
            series.setdefault((who, arity), []).append((count, count / ms / 1e3))
    counts = sorted({int(r["leaves"]) for r in rows})
    top = max(v for pts in series.values() for _, v in pts) * 1.1
    xmin, xmax = math.log10(counts[0]), math.log10(counts[-1])

    def x(count):
        return LEFT + (math.log10(count) - xmin) / (xmax - xmin) * (WIDTH - LEFT - RIGHT)

    def y(value):
        return HEIGHT - BOTTOM - value / top * (HEIGHT - TOP - BOTTOM)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{WIDTH / 2 - 60}" y="22" font-size="15">Batch build throughput, BLAKE3 (in memory)</text>']
    for i in range(6):
        value = top * i / 5
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y(value) + 4:.1f}" text-anchor="end">{value:.0f}</text>')
    for count in counts:
        out.append(f'<text x="{x(count):.1f}" y="{HEIGHT - BOTTOM + 18}" text-anchor="middle">{count:,}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 15}" text-anchor="middle">leaves per batch (log scale)</text>')
    out.append(f'<text transform="translate(18,{(TOP + HEIGHT - BOTTOM) / 2}) rotate(-90)" text-anchor="middle">million leaves per second</text>')
    legend_y = TOP + 10
    for (who, arity), pts in sorted(series.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        pts.sort()
        path = " ".join(f"{x(c):.1f},{y(v):.1f}" for c, v in pts)
        dash = "" if who == "cairn" else ' stroke-dasharray="6 4"'
        out.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[arity]}" stroke-width="2"{dash}/>')
        for c, v in pts:
            out.append(f'<circle cx="{x(c):.1f}" cy="{y(v):.1f}" r="3" fill="{COLORS[arity]}"/>')
        lx = WIDTH - RIGHT + 20
        out.append(f'<line x1="{lx}" x2="{lx + 30}" y1="{legend_y}" y2="{legend_y}" stroke="{COLORS[arity]}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{lx + 38}" y="{legend_y + 4}">{who} N={arity}</text>')
        legend_y += 20
    out.append("</svg>")
    open(target, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_throughput.py PEERS.csv OUT.svg")
    main(sys.argv[1], sys.argv[2])
