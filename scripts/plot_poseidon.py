#!/usr/bin/env python3
"""Plots Poseidon's time per hash by width: light-poseidon, cairn one hash
at a time, cairn's bulk path (several hashes per pass where the CPU has a
multi-lane kernel), and the bound one BN254 field multiplication sets for
one hash at a time, from the CSV written by the per-hash comparison:

    cargo run --release -p cairn-bench --bin poseidon_peer -- \\
        --inputs 2,4,8,12 --csv docs/poseidon.csv
    python3 scripts/plot_poseidon.py docs/poseidon.csv docs/poseidon.svg

Plain SVG written by hand, so the script needs nothing beyond Python 3.
"""
import csv
import math
import sys

SERIES = [
    ("light_poseidon_us", "light-poseidon, one at a time", "#7570b3"),
    ("cairn_us", "cairn, one at a time", "#d95f02"),
    ("cairn_batched_us", "cairn bulk path (tree levels)", "#1b9e77"),
]
WIDTH, HEIGHT = 760, 460
LEFT, RIGHT, TOP, BOTTOM = 70, 240, 40, 60


def main(source, target):
    rows = list(csv.DictReader(open(source)))
    if not rows:
        sys.exit(f"{source}: no rows")
    kernel = rows[0]["kernel"]
    values = [float(r[key]) for r in rows for key, _, _ in SERIES] + [float(r["bound_us"]) for r in rows]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))

    def y(us):
        span = math.log10(hi) - math.log10(lo)
        return HEIGHT - BOTTOM - (math.log10(us) - math.log10(lo)) / span * (HEIGHT - TOP - BOTTOM)

    plot_w = WIDTH - LEFT - RIGHT
    group_w = plot_w / len(rows)
    bar_w = group_w * 0.7 / len(SERIES)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="15">Poseidon (BN254, circomlib): time per hash by inputs</text>',
    ]
    decade = lo
    while decade <= hi * 1.0001:
        yy = y(decade)
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{yy + 4:.1f}" text-anchor="end">{decade:g}</text>')
        decade *= 10
    out.append(f'<text x="18" y="{(TOP + HEIGHT - BOTTOM) / 2:.0f}" transform="rotate(-90 18 {(TOP + HEIGHT - BOTTOM) / 2:.0f})" text-anchor="middle">microseconds per hash (log)</text>')
    for g, row in enumerate(rows):
        x0 = LEFT + g * group_w + group_w * 0.15
        for k, (key, _, color) in enumerate(SERIES):
            value = float(row[key])
            top = y(value)
            out.append(f'<rect x="{x0 + k * bar_w:.1f}" y="{top:.1f}" width="{bar_w - 2:.1f}" height="{HEIGHT - BOTTOM - top:.1f}" fill="{color}"/>')
            out.append(f'<text x="{x0 + k * bar_w + bar_w / 2 - 1:.1f}" y="{top - 4:.1f}" text-anchor="middle" font-size="10">{value:.3g}</text>')
        bound = y(float(row["bound_us"]))
        out.append(f'<line x1="{x0 - 4:.1f}" x2="{x0 + len(SERIES) * bar_w + 2:.1f}" y1="{bound:.1f}" y2="{bound:.1f}" stroke="black" stroke-dasharray="4 3"/>')
        label = f'{row["inputs"]} inputs (t = {row["t"]})'
        out.append(f'<text x="{LEFT + g * group_w + group_w / 2:.1f}" y="{HEIGHT - BOTTOM + 20}" text-anchor="middle">{label}</text>')
    out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{HEIGHT - BOTTOM}" y2="{HEIGHT - BOTTOM}" stroke="black"/>')
    legend_x = WIDTH - RIGHT + 16
    for k, (_, name, color) in enumerate(SERIES):
        ly = TOP + 20 + k * 22
        out.append(f'<rect x="{legend_x}" y="{ly - 10}" width="12" height="12" fill="{color}"/>')
        out.append(f'<text x="{legend_x + 18}" y="{ly}">{name}</text>')
    ly = TOP + 20 + len(SERIES) * 22
    out.append(f'<line x1="{legend_x}" x2="{legend_x + 12}" y1="{ly - 4}" y2="{ly - 4}" stroke="black" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{legend_x + 18}" y="{ly}">field-multiplication bound,</text>')
    out.append(f'<text x="{legend_x + 18}" y="{ly + 15}">one hash at a time</text>')
    for k, part in enumerate(["bulk kernel:"] + kernel.replace(" (", "\n(").split("\n")):
        out.append(f'<text x="{legend_x}" y="{ly + 45 + 14 * k}" font-size="10">{part}</text>')
    out.append("</svg>")
    open(target, "w").write("\n".join(out) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: plot_poseidon.py POSEIDON.csv OUT.svg")
    main(sys.argv[1], sys.argv[2])
