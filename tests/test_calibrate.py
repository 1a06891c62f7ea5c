"""`loremap calibrate`: the abstention threshold fitted to a project's own questions, the rates
before and after with intervals, written only with --apply, and doctor saying which threshold
is in force."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from loremap.search.engine import Signal
from loremap.use.calibrate import fit, rates

TOPICS = [
    ("Refunds are issued within five days", "refund payment card bank delay", "refund"),
    ("Coupons apply after the cart total", "coupon discount cart total order", "coupon"),
    ("Passwords are hashed with argon2", "password hash argon2 salt login", "password"),
    ("Invoices are numbered per year", "invoice number year sequence accounting", "invoice"),
    ("Images are resized on upload", "image resize upload thumbnail storage", "image"),
    ("Emails go through the outbox queue", "email outbox queue retry smtp", "email"),
    ("Sessions expire after an hour", "session expiry hour cookie logout", "session"),
    ("Exports are written as CSV", "export csv spreadsheet columns download", "export"),
    ("Search indexes are rebuilt nightly", "search index rebuild nightly cron", "index"),
    ("Webhooks are signed with HMAC", "webhook signature hmac secret verify", "webhook"),
    ("Feature flags live in the database", "feature flag toggle database rollout", "flag"),
    ("Timezones are stored as UTC", "timezone utc offset storage display", "timezone"),
]
OFF_TOPIC = ["how do I bake sourdough bread at home", "which telescope shows saturn rings",
             "best way to train a puppy to sit", "what wine goes with grilled salmon",
             "how to tune a classical guitar", "when do tulips bloom in holland",
             "how far can a marathon runner go", "what causes northern lights",
             "how to knit a wool scarf", "which mountain is the tallest in africa",
             "how to brew green tea properly", "what is the capital of peru",
             "how to paint with watercolors", "why do cats purr so much",
             "how long do sea turtles live", "what makes a good chess opening",
             "how to grow tomatoes on a balcony", "who invented the bicycle",
             "how to clean a cast iron pan", "what is the speed of sound in water",
             "how do bees make honey", "which birds migrate south in winter"]


@pytest.fixture
def shop(project: Path, cli) -> Path:
    for title, body, _ in TOPICS:
        assert cli("remember", "-t", "decision", "--title", title, "-m", body).code == 0
    return project


def dataset(path: Path, answerable: int = 24, unanswerable: int = 22) -> Path:
    lines = []
    for n in range(answerable):
        title, body, word = TOPICS[n % len(TOPICS)]
        note_id = "decision-" + "-".join(w.lower() for w in title.split())
        ask = (f"why is the {word} done this way" if n < len(TOPICS)
               else f"what do we do about {' '.join(body.split()[:2])}")
        lines.append({"query": ask, "gold": [note_id]})
    lines += [{"query": question, "gold": []} for question in OFF_TOPIC[:unanswerable]]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_the_fitted_threshold_keeps_false_abstention_under_three_percent():
    yes = [Signal(c) for c in (0.9, 0.8, 0.5, 0.45, 0.4)] * 8
    no = [Signal(c) for c in (0.3, 0.2, 0.1, 0.05)] * 10 + [Signal(0.0, "nothing matched")]
    fitted = fit(yes, no)
    assert fitted.false_abstention == 0.0 and fitted.true_abstention == 1.0
    assert 0.3 < fitted.threshold <= 0.4 + 1e-5
    mixed = yes + [Signal(0.2)]  # one answerable question as weak as the off-topic ones
    fitted = fit(mixed, no)
    assert fitted.false_abstention <= 0.03
    lo, hi = fitted.false_interval
    assert lo <= fitted.false_abstention <= hi
    assert rates(yes, no, 0.0).true_abstention == pytest.approx(1 / 41)


def test_calibrate_reports_and_writes_only_with_apply(shop, cli, tmp_path):
    path = dataset(tmp_path / "questions.jsonl")
    config = shop / ".loremap" / "config.toml"
    before = config.read_bytes()
    done = cli("calibrate", "--dataset", str(path), "--json")
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert (report["answerable"], report["unanswerable"]) == (24, 22)
    assert report["after"]["false_abstention"] <= 0.03
    assert report["after"]["true_abstention"] >= report["before"]["true_abstention"] or \
        report["before"]["false_abstention"] > 0.03
    assert config.read_bytes() == before and not report["applied"]
    applied = cli("calibrate", "--dataset", str(path), "--apply")
    assert applied.code == 0 and "written to search.tuning" in applied.out
    text = config.read_text(encoding="utf-8")
    assert f"coverage={report['after']['threshold']:g}" in text
    assert "calibrated = " in text and "questions.jsonl" in text
    doctor = cli("doctor").out
    assert f"abstention: coverage {report['after']['threshold']:g} (calibrated " in doctor
    again = json.loads(cli("calibrate", "--dataset", str(path), "--json").out)
    assert again["before"]["threshold"] == report["after"]["threshold"]


def test_doctor_names_the_default_threshold(project, cli):
    assert "abstention: coverage 0.3 (the default; `loremap calibrate` fits it" in \
        cli("doctor").out


def test_bad_datasets_are_refused_in_one_line_and_change_nothing(shop, cli, tmp_path):
    config = shop / ".loremap" / "config.toml"
    before = config.read_bytes()
    few = dataset(tmp_path / "few.jsonl", answerable=5, unanswerable=22)
    no_gold = tmp_path / "no-gold.jsonl"
    no_gold.write_text("".join(json.dumps({"query": q, "gold": []}) + "\n" for q in OFF_TOPIC),
                       encoding="utf-8")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"query": "a", "gold": ["x"]}\n{"query": \n', encoding="utf-8")
    cases = [
        (few, "needs at least 20 answerable questions (\"gold\": [ids]) and 20 unanswerable "
              "ones (\"gold\": []); it has 5 and 22"),
        (no_gold, "it has 0 and 22"),
        (broken, "broken.jsonl:2: not valid JSON"),
        (tmp_path / "missing.jsonl", "cannot read the dataset"),
    ]
    for path, message in cases:
        done = cli("calibrate", "--dataset", str(path), "--apply")
        assert done.code == 1 and message in done.err and done.err.count("\n") == 1, \
            (path, done.err)
    assert config.read_bytes() == before
