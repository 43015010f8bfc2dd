"""The HTML report (sbc-sql report, anonymize --report, sbc_sql.report): its figures are
evaluate's and profile's, it holds no cell value and loads nothing, it runs in a real
headless Chromium without a console error, and its files are written atomically."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import browser
import duckdb
import numpy as np
import pandas as pd
import pytest

import sbc_sql
from sbc_sql.quality import html_report

QIS = ["age", "zip", "sex"]
CURVE_K = (2, 5, 10)
N = 240


def patients() -> pd.DataFrame:
    """Rows whose text values are tokens no figure or word of the page can hold."""
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "pid": [f"PID{i:05d}QQ" for i in range(N)],
            "age": rng.integers(18, 90, N).astype(int),
            "zip": [f"ZQ{z:04d}X" for z in rng.integers(0, 30, N)],
            "sex": [("sexqF", "sexqM")[s] for s in rng.integers(0, 2, N)],
            "income": (104729 + 7919 * rng.integers(0, 40, N)).astype(int),
            "dx": [f"dxq{d}_zz" for d in rng.integers(0, 6, N)],
        }
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    """A database file with 'patients' and its release 'rel' (k=5, 2-diverse on dx)."""
    path = tmp_path / "clinic.duckdb"
    con = duckdb.connect(str(path))
    frame = patients()
    con.register("frame", frame)
    con.execute("CREATE TABLE patients AS SELECT * FROM frame")
    con.unregister("frame")
    con.close()
    with sbc_sql.anonymize(
        str(path),
        "patients",
        5,
        qi=QIS,
        sensitive="dx",
        drop="pid",
        keep="income",
        output="rel",
        l_diversity=2,
    ):
        pass
    return path


class Marks(HTMLParser):
    """Every element with data-* attributes, and every reference an element makes."""

    def __init__(self) -> None:
        super().__init__()
        self.marks: list[tuple[str, dict[str, str]]] = []
        self.refs: list[str] = []
        self.charts: list[str] = []
        self.chart: str | None = None
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg" and "data-chart" in a:
            self.chart = a["data-chart"]
            self.charts.append(self.chart)
        if tag == "script":
            self.scripts += 1
        self.refs += [a[k] for k in ("src", "href", "xlink:href") if k in a]
        data = {k[5:]: v for k, v in a.items() if k.startswith("data-") and k != "data-chart"}
        if data:
            self.marks.append((self.chart or "", {**data, "tag": tag, "class": a.get("class", "")}))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.chart = None

    def of(self, chart: str) -> list[dict[str, str]]:
        return [m for c, m in self.marks if c == chart and "mark" in m["class"].split()]


def parsed(text: str) -> Marks:
    p = Marks()
    p.feed(text)
    return p


@pytest.fixture
def made(db: Path, tmp_path: Path) -> tuple[html_report.Report, Marks]:
    out = tmp_path / "report.html"
    found = sbc_sql.report(str(db), "patients", "rel", out, curve_k=CURVE_K)
    text = out.read_text(encoding="utf-8")
    assert text == found.html
    return found, parsed(text)


def test_the_figures_are_evaluates_and_profiles(made, db) -> None:
    found, page = made
    e = sbc_sql.evaluate(str(db), "patients", "rel", sensitive="dx", queries=0)
    p = sbc_sql.profile(str(db), "patients", qi=QIS, sensitive="dx", drop="pid", keep="income")
    assert p.risk is not None
    # NCP per QI and total
    ncp = {m["qi"]: float(m["value"]) for m in page.of("ncp")}
    assert ncp == pytest.approx(e.ncp) and set(ncp) == set(QIS)
    (total,) = [m for _, m in page.marks if "total-ncp" in m]
    assert float(total["total-ncp"]) == pytest.approx(e.total_ncp)
    # risk before: profile's figures on the raw QIs
    before = [m for m in page.of("risk") if m["series"] == "before"]
    after = [m for m in page.of("risk") if m["series"] == "after"]
    assert len(before) == len(after) == len(html_report.BANDS)
    assert sum(int(m["records"]) for m in before) == sum(int(m["records"]) for m in after) == N
    shares = [float(m["share"]) for m in before]
    assert sum(shares[:3]) == pytest.approx(p.risk.prosecutor_above_20)  # classes of fewer than 5
    assert sum(shares[:4]) == pytest.approx(p.risk.prosecutor_above_10)  # fewer than 10
    assert sum(shares[:5]) == pytest.approx(p.risk.prosecutor_above_5)  # fewer than 20
    assert int(before[0]["records"]) == p.risk.unique_records
    risk = {(m["risk"], k): m[k] for _, m in page.marks if "risk" in m for k in ("highest", "mean") if k in m}
    high_before = next(v for (who, k), v in risk.items() if who.startswith("before") and k == "highest")
    mean_before = next(v for (who, k), v in risk.items() if who.startswith("before") and k == "mean")
    assert float(high_before) == pytest.approx(p.risk.prosecutor_highest)
    assert float(mean_before) == pytest.approx(p.risk.prosecutor_mean)
    # risk after: no record above 1/k; the release's tuples
    assert all(int(m["records"]) == 0 for m in after[:3])  # k = 5: nobody in a class under 5
    high_after = next(v for (who, k), v in risk.items() if who.startswith("after") and k == "highest")
    mean_after = next(v for (who, k), v in risk.items() if who.startswith("after") and k == "mean")
    assert float(high_after) <= 1 / e.smallest_class + 1e-12
    assert float(mean_after) == pytest.approx(e.tuples / e.released)
    # class sizes
    sizes = page.of("sizes")
    assert sum(int(m["classes"]) for m in sizes) == e.classes
    assert int(sizes[0]["lo"]) == e.smallest_class and int(sizes[-1]["hi"]) == e.largest_class
    assert sum(int(m["classes"]) for m in sizes if int(m["lo"]) == e.smallest_class) > 0
    # the curve: every k asked and the release's own, marked, with its own figure
    curve = page.of("curve")
    assert sorted(int(m["k"]) for m in curve) == sorted({*CURVE_K, 5})
    (own,) = [m for m in curve if m["own"] == "1"]
    assert int(own["k"]) == 5 and float(own["ncp"]) == pytest.approx(e.total_ncp)
    ncps = [float(m["ncp"]) for m in sorted(curve, key=lambda m: int(m["k"]))]
    assert ncps[0] <= ncps[-1]
    # the sensitive column: diversity per class, and evaluate's l
    diversity = page.of("diversity")
    assert sum(int(m["classes"]) for m in diversity) == e.classes
    assert min(int(m["values"]) for m in diversity) == e.l_diversity >= 2
    figures = {m["figure"]: float(m["value"]) for _, m in page.marks if "figure" in m}
    assert figures["l-diversity"] == e.l_diversity
    assert figures["t-closeness"] == pytest.approx(e.t_closeness)
    assert found.sensitive == "dx"


def test_the_page_holds_no_value_and_loads_nothing(made) -> None:
    found, page = made
    text = found.html
    assert "http://" not in text and "https://" not in text
    assert "<script" not in text.lower() and page.scripts == 0
    assert page.refs == []  # no src, no href: nothing to load
    assert '<meta name="viewport"' in text
    frame = patients()
    for column in ("pid", "zip", "sex", "dx", "income"):
        for value in {str(v) for v in frame[column]}:
            assert value not in text, (column, value)
    for column in ("age", "zip", "sex", "dx", "income", "pid"):
        assert column in text  # names are shown
    # every metric's meaning, from report.GROUPS
    assert "lower is better" in text and "share of a QI" in text


def test_names_are_escaped(tmp_path) -> None:
    con = duckdb.connect()
    con.execute('CREATE TABLE t ("<b>a&g</b>" INTEGER, "zip" VARCHAR)')
    con.execute("INSERT INTO t SELECT i % 50, 'z' || (i % 7) FROM range(120) AS r(i)")
    sbc_sql.anonymize(con, "t", 4, output="r")
    found = sbc_sql.report(con, "t", "r", curve_k=None)
    assert "<b>a&g</b>" not in found.html and "&lt;b&gt;a&amp;g&lt;/b&gt;" in found.html
    assert found.curve == [] and "no curve asked" in found.html
    assert "The release declares no sensitive column." in found.html


def test_a_script_in_a_name_is_escaped_and_in_a_category_never_shown() -> None:
    """Column names are shown, escaped wherever they appear (text, titles, data-* attributes);
    a category is a cell value, so it is not on the page at all, escaped or not."""
    qi, sensitive = "<script>alert(1)</script>", "<script>dx</script>"
    con = duckdb.connect()
    con.execute(f'CREATE TABLE t ("{qi}" INTEGER, ward VARCHAR, "{sensitive}" VARCHAR)')
    con.execute(
        "INSERT INTO t SELECT i % 50, "
        "CASE WHEN i % 3 = 0 THEN '<script>wardq()</script>' ELSE 'wardq' || (i % 5) END, "
        "CASE WHEN i % 2 = 0 THEN '<script>dxq()</script>' ELSE 'dxq' || (i % 4) END "
        "FROM range(160) AS r(i)"
    )
    sbc_sql.anonymize(con, "t", 4, qi=[qi, "ward"], sensitive=sensitive, output="r")
    found = sbc_sql.report(con, "t", "r", curve_k=(2, 8))
    text = found.html
    page = parsed(text)
    assert "<script" not in text.lower() and page.scripts == 0
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "&lt;script&gt;dx&lt;/script&gt;" in text
    assert {m["qi"] for m in page.of("ncp")} == {qi, "ward"}  # the name, whole, once unescaped
    assert found.sensitive == sensitive and page.of("diversity") and len(page.of("curve")) == 3
    assert "wardq" not in text and "dxq" not in text


def test_the_curve_keeps_nothing(db, tmp_path) -> None:
    con = duckdb.connect(str(db))
    objects = sorted(con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    con.close()
    sbc_sql.report(str(db), "patients", "rel", curve_k=[2, 3, 1000])  # 1000: above half the rows
    con = duckdb.connect(str(db))
    assert sorted(con.execute("SELECT table_name FROM information_schema.tables").fetchall()) == objects
    con.close()


def test_a_release_without_provenance_has_a_page_without_curve(db) -> None:
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE copy AS SELECT * FROM rel")
    con.close()
    found = sbc_sql.report(str(db), "patients", "copy")
    assert found.curve == [] and "no provenance" in found.html
    assert found.evaluation.classes > 0


def test_api_errors_speak_python(db) -> None:
    with pytest.raises(sbc_sql.InputError, match=r"curve_k"):
        sbc_sql.report(str(db), "patients", "rel", curve_k=[1])


# ---------------------------------------------------------------------------------------
# in a real browser

CHARTS_JS = (
    "JSON.stringify(Object.fromEntries([...document.querySelectorAll('svg[data-chart]')]"
    ".map(s => [s.dataset.chart, s.querySelectorAll('.mark').length])))"
)


def test_the_page_runs_clean_in_chromium(made, chromium, tmp_path) -> None:
    found, page = made
    assert found.path is not None
    loaded = browser.open_page(
        chromium,
        found.path,
        evaluate={
            "charts": CHARTS_JS,
            "drawn": "[...document.querySelectorAll('svg .mark')]"
            ".filter(m => m.getBoundingClientRect().height > 0).length",
        },
    )
    assert loaded.errors == []
    assert loaded.requests == [found.path.resolve().as_uri()]  # the file itself, nothing more
    counts = __import__("json").loads(loaded.values["charts"])
    assert counts == {
        "risk": 2 * len(html_report.BANDS),
        "ncp": len(QIS),
        "sizes": len(found.class_sizes),
        "curve": len(found.curve),
        "diversity": len(found.diversity),
    }
    assert counts == {chart: len(page.of(chart)) for chart in page.charts}
    assert loaded.values["drawn"] > 0
    shot = tmp_path / "report.png"
    shot.write_bytes(loaded.screenshot)
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 10_000


def test_the_page_fits_a_phone(made, chromium) -> None:
    found, _ = made
    loaded = browser.open_page(
        chromium,
        found.path,
        width=390,
        height=800,
        mobile=True,
        full_page=False,
        evaluate={
            "wide": "document.documentElement.scrollWidth",
            "svg": "Math.max(...[...document.querySelectorAll('svg.chart')]"
            ".map(s => s.getBoundingClientRect().width))",
        },
    )
    assert loaded.errors == []
    assert loaded.values["wide"] <= 390 and loaded.values["svg"] <= 390


@pytest.mark.parametrize(
    "body",
    [
        "<script>notAFunction();</script>",
        "<script>console.error('broken');</script>",
    ],
)
def test_the_detector_sees_a_script_error(chromium, tmp_path, body) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(f"<!DOCTYPE html><html><body><p>x</p>{body}</body></html>", encoding="utf-8")
    assert len(browser.open_page(chromium, bad).errors) == 1


# ---------------------------------------------------------------------------------------
# the command line


def test_report_writes_the_file_and_says_where(cli, db, tmp_path) -> None:
    out = tmp_path / "page.html"
    r = cli(
        ["report", "--db", db, "--original", "patients", "--release", "rel", "-o", out, "--curve-k", "2,4"]
    )
    assert r.exit_code == 0, r.stderr
    assert r.stdout.strip().splitlines() == [f"wrote the report of 'rel' to {out}"]
    assert "report: k=2" in r.stderr and out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_a_missing_release_is_one_error_naming_it(cli, db, tmp_path) -> None:
    out = tmp_path / "page.html"
    r = cli(["report", "--db", db, "--original", "patients", "--release", "nope", "-o", out])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "Error: table or view 'nope' does not exist in the database; pass an existing one with --release"
    ]
    assert not out.exists()


def test_an_existing_output_is_replaced_only_when_asked(cli, db, tmp_path) -> None:
    out = tmp_path / "page.html"
    out.write_text("mine", encoding="utf-8")
    args = [
        "report",
        "--db",
        db,
        "--original",
        "patients",
        "--release",
        "rel",
        "-o",
        out,
        "--curve-k",
        "none",
    ]
    r = cli(args)
    assert r.exit_code == 1 and r.stderr.strip().splitlines() == [
        f"Error: --output '{out}' already exists; pass --replace to overwrite it or choose another --output"
    ]
    assert out.read_text(encoding="utf-8") == "mine"
    r = cli([*args, "--replace"])
    assert r.exit_code == 0, r.stderr
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    r = cli([*args[:-4], "-o", db, "--replace", "--curve-k", "none"])
    assert r.exit_code == 1 and "which the run reads" in r.stderr


def test_an_interrupted_write_leaves_nothing(cli, db, tmp_path, monkeypatch) -> None:
    out = tmp_path / "page.html"

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(html_report.os, "replace", interrupted)
    r = cli(["report", "--db", db, "--original", "patients", "--release", "rel", "-o", out])
    assert r.exit_code == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]


def test_bad_curve_k_is_one_error(cli, db, tmp_path) -> None:
    r = cli(
        ["report", "--db", db, "--original", "patients", "--release", "rel", "-o", tmp_path / "p.html"]
        + ["--curve-k", "2,x"]
    )
    assert r.exit_code == 1 and re.fullmatch(r"Error: --curve-k '2,x': 'x' is not a k .*\n", r.stderr)


def test_anonymize_report_writes_it_after_a_verified_run(cli, db, tmp_path) -> None:
    out = tmp_path / "run.html"
    args = ["anonymize", "--db", db, "-t", "patients", "-k", "4", "--qi", "age,zip", "--drop", "pid"]
    args += ["--keep", "sex,income", "--sensitive", "dx", "-o", "rel4", "--report", out, "-q"]
    r = cli(args)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == f"wrote the report of 'rel4' to {out}"
    text = out.read_text(encoding="utf-8")
    assert "rel4" in text and len(parsed(text).of("ncp")) == 2


def test_anonymize_report_writes_nothing_on_a_failed_or_dry_run(cli, db, tmp_path) -> None:
    out = tmp_path / "run.html"
    base = ["anonymize", "--db", db, "-t", "patients", "--qi", "age,zip", "--drop", "pid"]
    base += ["--keep", "sex,income", "--sensitive", "dx", "--report", out, "-q"]
    r = cli([*base, "-k", "4", "-o", "rel"])  # 'rel' exists: the run fails
    assert r.exit_code == 1 and r.stderr.startswith("Error: ")
    r = cli([*base, "-k", "1000", "-o", "big"])  # k above the rows
    assert r.exit_code == 1 and r.stderr.startswith("Error: ")
    r = cli([*base, "-k", "4", "-o", "dry", "--sql"])
    assert r.exit_code == 0, r.stderr
    assert not out.exists()


def test_postgresql_gives_the_page_duckdb_gives(db, postgres_url, tmp_path) -> None:
    from helpers import to_postgres

    con = duckdb.connect(str(db))
    to_postgres(con, "patients", postgres_url)
    con.close()
    roles = {"qi": QIS, "sensitive": "dx", "drop": "pid", "keep": "income", "l_diversity": 2}
    with sbc_sql.anonymize(postgres_url, "patients", 5, output="rel", **roles):
        pass
    duck = parsed(sbc_sql.report(str(db), "patients", "rel", curve_k=CURVE_K).html)
    found = sbc_sql.report(postgres_url, "patients", "rel", tmp_path / "pg.html", curve_k=CURVE_K)
    pg = parsed(found.html)
    assert pg.charts == duck.charts
    for chart in pg.charts:
        got, want = pg.of(chart), duck.of(chart)
        assert len(got) == len(want), chart
        for g, w in zip(got, want, strict=True):
            assert g.keys() == w.keys()
            for key in g:
                if re.fullmatch(r"-?[0-9.e+-]+", w[key]):
                    assert float(g[key]) == pytest.approx(float(w[key]), abs=1e-9), (chart, key)
                else:
                    assert g[key] == w[key], (chart, key)


def test_a_k_without_a_verified_release_is_a_gap_in_the_curve(db, monkeypatch) -> None:
    from sbc_sql.run import publish as publishing

    real = publishing.publish

    def publish(prepared, clustering, **kwargs):
        if clustering.plan.k == 2:
            raise sbc_sql.InputError("3 classes cannot keep l-diversity 2 on 'dx'")
        return real(prepared, clustering, **kwargs)

    monkeypatch.setattr(publishing, "publish", publish)
    found = sbc_sql.report(str(db), "patients", "rel", curve_k=CURVE_K)
    assert [p.k for p in found.curve] == [5, 10]
    assert found.curve_failed == [(2, "3 classes cannot keep l-diversity 2 on 'dx'")]
    assert "k = 2: no verified release (3 classes cannot keep l-diversity 2 on &#x27;dx&#x27;)" in found.html


def test_the_curve_keeps_the_releases_limits_and_target(db) -> None:
    """The curve re-clusters with the run's options: its point at another k is the release
    anonymize makes at that k with the same limits and target."""
    options = {"qi": QIS, "sensitive": "dx", "drop": "pid", "keep": "income", "l_diversity": 2}
    limited = {"max_width": "age=15", "max_values": "zip=4", "target": "income", "max_suppression": 0.2}
    with sbc_sql.anonymize(str(db), "patients", 5, output="lim", **options, **limited):
        pass
    found = sbc_sql.report(str(db), "patients", "lim", curve_k=[6])
    (point,) = [p for p in found.curve if p.k == 6]
    with sbc_sql.anonymize(str(db), "patients", 6, output="lim6", **options, **limited) as at6:
        assert at6.measures is not None
        assert point.ncp == pytest.approx(at6.measures.total_ncp, abs=1e-12)
    with sbc_sql.anonymize(str(db), "patients", 6, output="free6", **options) as free:
        assert free.measures is not None
        assert point.ncp != pytest.approx(free.measures.total_ncp, abs=1e-12)
    assert "max width" in found.html and "age=15" in found.html


# ---------------------------------------------------------------------------------------
# the charts' room


class Texts(HTMLParser):
    """Every chart's viewBox width and its text elements: (x, anchor, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: list[tuple[str, float, list[tuple[float, str, str]]]] = []
        self.open: tuple[float, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "svg":
            self.charts.append((a.get("data-chart", ""), float(a["viewbox"].split()[2]), []))
        elif tag == "text" and self.charts:
            self.open = (float(a["x"]), a.get("text-anchor", "start"))

    def handle_data(self, data: str) -> None:
        if self.open is not None:
            self.charts[-1][2].append((*self.open, data))
            self.open = None


@pytest.fixture(scope="module")
def unique_db(tmp_path_factory) -> Path:
    """2,000 rows each unique on its QIs before release (a risk bar at 100 %), released
    2-anonymous in classes so narrow that every NCP is near 0.0005."""
    path = tmp_path_factory.mktemp("unique") / "unique.duckdb"
    rng = np.random.default_rng(11)
    n = 2000
    frame = pd.DataFrame(
        {
            "age": np.arange(n),
            "ward": [f"wq{i // 1000}" for i in range(n)],
            "dx": [f"dxq{d}_zz" for d in rng.integers(0, 4, n)],
        }
    )
    with duckdb.connect(str(path)) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE wide AS SELECT * FROM frame")
    with sbc_sql.anonymize(str(path), "wide", 2, qi=["age", "ward"], sensitive="dx", output="rel"):
        pass
    return path


def test_every_chart_label_fits_in_its_chart(cli, unique_db, tmp_path) -> None:
    """No text of any chart runs past its edges, the bar at 100 % (its value '100.0 %
    (2,000)' after it) included: each text's extent, estimated from above, lies within the
    viewBox."""
    from sbc_sql.quality.report_render import text_width

    out = tmp_path / "page.html"
    args = ["report", "--db", unique_db, "--original", "wide", "--release", "rel", "-o", out]
    r = cli([*args, "--curve-k", "none", "-q"])
    assert r.exit_code == 0, r.stderr
    page = Texts()
    page.feed(out.read_text(encoding="utf-8"))
    assert "100.0 % (2,000)" in [t for _, _, texts in page.charts for _, _, t in texts]
    for chart, width, texts in page.charts:
        for x, anchor, text in texts:
            w = text_width(text)
            left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
            assert left >= 0 and left + w <= width, (chart, text, left, left + w, width)


def test_the_ncp_chart_is_scaled_to_its_figures(unique_db) -> None:
    """With every NCP near 0.0005 the longest NCP bar is most of the chart's length, the
    scale is stated under it and in the caption, and the figures printed are the NCP."""
    from sbc_sql.quality.report_render import BAR_LENGTH

    found = sbc_sql.report(str(unique_db), "wide", "rel", curve_k=None)
    ncp = found.evaluation.ncp
    assert 0 < max(ncp.values()) < 0.001
    page = parsed(found.html)
    bars = page.of("ncp")
    assert {b["qi"]: float(b["value"]) for b in bars} == ncp
    longest = max(float(re.search(r'width="([\d.]+)"', m).group(1)) for m in _ncp_rects(found.html))
    assert longest >= 0.5 * BAR_LENGTH
    scale = float(re.search(r'data-ncp-scale="([^"]+)"', found.html).group(1))
    assert max(ncp.values()) <= scale < 0.001
    shown = re.search(r'data-chart="ncp" data-scale="([^"]+)"', found.html)
    assert shown is not None and float(shown.group(1)) == scale
    assert f">{scale:g}</text>" in found.html and f"{max(ncp.values()):.4f}" in found.html


def _ncp_rects(text: str) -> list[str]:
    chart = text[text.index('data-chart="ncp"') :]
    return re.findall(r"<rect [^>]*>", chart[: chart.index("</svg>")])


def test_every_chart_label_fits_in_chromium(unique_db, chromium, tmp_path) -> None:
    """As a browser draws them, no chart's text reaches past its viewBox."""
    out = tmp_path / "page.html"
    sbc_sql.report(str(unique_db), "wide", "rel", out, curve_k=None)
    loaded = browser.open_page(
        chromium,
        out,
        evaluate={
            "texts": "[...document.querySelectorAll('svg.chart text')].length",
            "outside": "JSON.stringify([...document.querySelectorAll('svg.chart')].flatMap(s => "
            "[...s.querySelectorAll('text')].filter(t => { const b = t.getBBox(); "
            "return b.x < -0.5 || b.x + b.width > s.viewBox.baseVal.width + 0.5; })"
            ".map(t => t.textContent)))",
        },
    )
    assert loaded.errors == []
    assert loaded.values["texts"] > 10
    assert __import__("json").loads(loaded.values["outside"]) == []


# ---------------------------------------------------------------------------------------
# section 8: every figure of evaluate


def evaluate_figures(doc: dict) -> dict[tuple[str, ...], object]:
    """evaluate's JSON document as {(group, metric[, part]): value}: each entry ({"value":
    ...}) at its place, and a plain value (the query accuracy's seed) as it is."""
    out: dict[tuple[str, ...], object] = {}
    for group, metrics in doc.items():
        for key, entry in metrics.items():
            if isinstance(entry, dict) and "value" not in entry:
                out.update({(group, key, part): e["value"] for part, e in entry.items()})
            else:
                out[(group, key)] = entry["value"] if isinstance(entry, dict) else entry
    return out


def test_section_8_shows_every_figure_evaluate_gives(cli, db, tmp_path) -> None:
    """The figures of section 8 are exactly those `evaluate --json` gives for the release,
    query accuracy included, with the same values: a figure evaluate gains is on the page."""
    out = tmp_path / "page.html"
    names = ["--db", db, "--original", "patients", "--release", "rel"]
    made = cli(["report", *names, "-o", out, "--curve-k", "none", "-q"])
    assert made.exit_code == 0, made.stderr
    evaluated = cli(["evaluate", *names, "--json", "-q"])
    assert evaluated.exit_code == 0, evaluated.stderr
    doc = json.loads(evaluated.stdout)
    doc = {k: v for k, v in doc.items() if isinstance(v, dict) and k not in ("schema",)}
    want = evaluate_figures(doc)
    assert {"query_accuracy", "attribute_disclosure"} <= {key[0] for key in want}
    page = parsed(out.read_text(encoding="utf-8"))
    shown = {
        tuple(part for part in (m["group"], m["metric"], m["part"]) if part): m["value"]
        for _, m in page.marks
        if m["tag"] == "tr" and "group" in m
    }
    assert set(shown) == set(want)
    for key, value in want.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            assert float(shown[key]) == pytest.approx(value, rel=1e-12), key
        else:
            assert shown[key] == str(value), key


# ---------------------------------------------------------------------------------------
# the verdict


def verdict_of(text: str) -> dict[str, dict[str, str]]:
    """The verdict block's guarantees, warnings and notes, each by its key."""
    block = text[text.index('<section id="verdict"') :]
    block = block[: block.index("</section>")]
    out: dict[str, dict[str, str]] = {"guarantee": {}, "warning": {}, "note": {}}
    for kind, key, said in re.findall(
        r'<(?:li|p)[^>]* data-(guarantee|warning|note)="([^"]*)">([^<]*)<', block
    ):
        out[kind][key] = said
    return out


def test_the_verdict_states_guarantees_and_warns_of_weak_attribute_protection(cli, db, tmp_path) -> None:
    """A release 5-anonymous and 2-diverse on dx, with no t-closeness asked and a t-closeness
    distance above the threshold: the verdict, first on the page, says what was asked and
    holds, and warns of l = 2 and of the distance, naming the thresholds."""
    from sbc_sql.quality.verdict import LIMITS

    out = tmp_path / "page.html"
    r = cli(
        ["report", "--db", db, "--original", "patients", "--release", "rel", "-o", out, "--curve-k", "none"]
    )
    assert r.exit_code == 0, r.stderr
    text = out.read_text(encoding="utf-8")
    assert text.index('id="verdict"') < text.index('id="provenance"')
    found = verdict_of(text)
    assert set(found["guarantee"]) == {"k", "l-diversity"}
    assert "5-anonymity" in found["guarantee"]["k"] and "holding here" in found["guarantee"]["k"]
    assert "l=2 on &#x27;dx&#x27;" in found["guarantee"]["l-diversity"]
    t = sbc_sql.evaluate(str(db), "patients", "rel", queries=0).t_closeness
    assert t > LIMITS["t_closeness"].value
    assert {"t_closeness", "l_diversity"} <= set(found["warning"])
    assert f"t-closeness distance {t:.2f} on &#x27;dx&#x27;, above 0.5" in found["warning"]["t_closeness"]
    assert "l = 2 on &#x27;dx&#x27; (as asked), at or below 2" in found["warning"]["l_diversity"]
    assert "weak attribute protection" in found["warning"]["l_diversity"]
    for threshold in LIMITS.values():
        assert f'data-threshold="{threshold.key}" data-value="{threshold.value}"' in text


def test_the_verdict_warns_of_a_kept_determinant_and_high_linkage(cli, tmp_path) -> None:
    """A release at k = 2 that keeps a copy of a QI (allowed with --allow-determinant) and
    declares no sensitive column: warnings of the determinant (named) and of the
    record-linkage share, and a note that attribute disclosure is not measured."""
    path = tmp_path / "d.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(
            "CREATE TABLE t AS SELECT i % 97 AS age, 'zq' || (i % 5) AS zip, i % 97 AS age_copy "
            "FROM range(400) r(i)"
        )
    made = cli(
        ["anonymize", "--db", path, "-t", "t", "-k", "2", "--qi", "age,zip", "--keep", "age_copy"]
        + ["--allow-determinant", "age_copy", "-o", "r", "-q"]
    )
    assert made.exit_code == 0, made.stderr
    out = tmp_path / "page.html"
    r = cli(
        ["report", "--db", path, "--original", "t", "--release", "r", "-o", out, "--curve-k", "none", "-q"]
    )
    assert r.exit_code == 0, r.stderr
    found = verdict_of(out.read_text(encoding="utf-8"))
    assert "&#x27;age_copy&#x27;" in found["warning"]["determinant"]
    assert "--allow-determinant" in found["warning"]["determinant"]
    assert "above 20.0 %" in found["warning"]["record_linkage_share"]
    assert "t_closeness" not in found["warning"] and "sensitive" in found["note"]


def test_the_verdict_warns_of_high_suppression_and_a_broken_k(made) -> None:
    """Figures past the suppression threshold, and a smallest class below the k asked, are
    warned of; below the thresholds nothing is."""
    import dataclasses

    from sbc_sql.quality.verdict import LIMITS, verdict

    found, _ = made
    e = found.evaluation
    assert "suppressed_share" not in {w.key for w in verdict(found).warnings}
    many = int(e.n_rows * LIMITS["suppressed_share"].value) + 1
    broken = dataclasses.replace(found, evaluation=dataclasses.replace(e, suppressed=many, smallest_class=3))
    warned = {w.key: w.text for w in verdict(broken).warnings}
    assert f"{many:,} of {e.n_rows:,} rows suppressed" in warned["suppressed_share"]
    assert "above 5.0 %" in warned["suppressed_share"]
    assert "smallest class holds 3 rows" in warned["k"]
    assert "k" not in {g.key for g in verdict(broken).guarantees}


def test_the_metrics_page_states_every_threshold_of_the_verdict() -> None:
    from sbc_sql.quality.verdict import THRESHOLDS

    page = (Path(__file__).resolve().parents[1] / "docs" / "metrics.md").read_text(encoding="utf-8")
    for t in THRESHOLDS:
        assert f"| {t.figure} | {t.value:g} | {t.means} |" in page, t.key
