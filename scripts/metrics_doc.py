"""Write docs/metrics.md from the metric registry."""

from pathlib import Path

from silas_exp.metrics.registry import markdown

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"
    out.write_text(markdown())
    print(f"written: {out}")
