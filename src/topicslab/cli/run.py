"""``topicslab run``: the main job (see ``topicslab.experiment``)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from topicslab.cli._app import app, err, out


@app.command()
def run(
    preset: str = typer.Option("default", "--preset",
                               help="Run size: smoke (seconds), default (1M users), paper (10M)."),
    out_dir: Path = typer.Option(Path("topicslab-out"), "--out", "-o", help="Output directory."),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the whole run."),
    users: int | None = typer.Option(None, "--users", min=1, help="Override the preset's users."),
) -> None:
    """Run the release experiment on the built-in reference population."""
    from topicslab.experiment import run as run_experiment

    res = run_experiment(preset, out_dir, seed=seed, users=users, progress=True)
    t = Table(title="calibration of the reference population (published vs generated)")
    for col in ("statistic", "published", "generated", "rel. error", "ok"):
        t.add_column(col, justify="left" if col == "statistic" else "right")
    for row in res["population"]["calibration"]:
        t.add_row(row["name"], f"{row['published']:.4f}", f"{row['generated']:.4f}",
                  f"{row['relative_error']:+.1%}", "✓" if row["within_tolerance"] else "✗")
    out.print(t)
    times = Table(title="stage times", show_header=False)
    for stage, sec in res["stage_seconds"].items():
        times.add_row(stage, f"{sec:.1f} s")
    out.print(times)
    out.print(f"wrote {out_dir}/pop.parquet, traces.parquet, results.json")
    err.print("[yellow]not yet implemented:[/] " + "; ".join(
        f"{k} ({v})" for k, v in res["missing_stages"].items()))
