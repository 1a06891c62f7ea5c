"""Settings, per-user paths and project discovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from loremap.config import (
    SETTINGS,
    UserPaths,
    find_project_root,
    load_settings,
    settings_markdown,
)
from loremap.errors import InvalidInput

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_settings_come_from_defaults_then_config_then_environment(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[text]\nlanguages = ["pt", "en"]\n[vault]\nmax_note_bytes = 1000\n',
                      encoding="utf-8")
    settings = load_settings(config, {"LOREMAP_MAX_NOTE_BYTES": "2000"})
    assert settings.get_list("text.languages") == ("pt", "en")
    assert settings.get_int("vault.max_note_bytes") == 2000
    assert settings.get_int("index.busy_timeout_ms") == 5000
    env_list = load_settings(None, {"LOREMAP_LANGUAGES": "es, en"})
    assert env_list.get_list("text.languages") == ("es", "en")


def test_a_wrongly_typed_config_value_names_the_file_and_setting(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('[vault]\nmax_note_bytes = "big"\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match="config.toml: bad value 'big' for vault.max_note"):
        load_settings(config, {})


def test_loremap_home_moves_every_per_user_path():
    paths = UserPaths.from_env({"LOREMAP_HOME": "/x/lm"})
    assert (paths.personal, paths.logs, paths.cache) == (
        Path("/x/lm/personal"), Path("/x/lm/logs"), Path("/x/lm/cache"))


def test_xdg_directories_are_honoured():
    paths = UserPaths.from_env({"XDG_DATA_HOME": "/d", "XDG_STATE_HOME": "/s",
                                "XDG_CACHE_HOME": "/c"})
    assert paths.personal == Path("/d/loremap/personal")
    assert paths.logs == Path("/s/loremap/logs")
    assert paths.cache == Path("/c/loremap")


def test_the_project_root_is_the_nearest_loremap_dir_else_the_git_root(repo):
    deep = repo / "src" / "auth"
    assert find_project_root(deep, {}) == repo
    (repo / "src" / ".loremap").mkdir()
    assert find_project_root(deep, {}) == repo / "src"
    assert find_project_root(deep, {"LOREMAP_PROJECT_DIR": str(repo)}) == repo


def test_outside_git_and_loremap_there_is_no_project(tmp_path):
    assert find_project_root(tmp_path, {}) is None


def test_the_settings_doc_is_generated_from_the_table():
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    assert text == settings_markdown(), "regenerate: python -m loremap.config > docs/settings.md"
    for setting in SETTINGS:
        assert setting.env in text


@pytest.mark.parametrize(("raw", "default", "expected"), [
    ("yes", False, True), ("OFF", True, False), (1, False, True), (True, False, True),
    ("42", 0, 42), (" 7 ", 0, 7), (30, 1.5, 30.0), ("0.25", 1.0, 0.25), (3, "", "3"),
    ("a, b,,c", ("x",), ("a", "b", "c")), (["a", "b"], (), ("a", "b")),
    ("5:1:3", (1.0,), (5.0, 1.0, 3.0)), ([2, 0.5], (1.0,), (2.0, 0.5)),
])
def test_one_coercer_reads_settings_and_search_knobs_alike(raw, default, expected):
    from loremap.config import coerce

    separator = ":" if default and isinstance(default, tuple) and \
        isinstance(default[0], float) else ","
    assert coerce(raw, default, separator) == expected


@pytest.mark.parametrize(("raw", "default"), [
    ("maybe", False), ("big", 0), (True, 0), ("3.5", 0), (False, 1.0), ("x", 1.0),
    (5, ("a",)), (["a", 1], ("a",)), ("5:x", (1.0,)), ([True], (1.0,)),
])
def test_the_coercer_refuses_a_value_of_the_wrong_type(raw, default):
    from loremap.config import coerce

    with pytest.raises(ValueError, match="expected"):
        coerce(raw, default, ":")


def test_settings_and_search_knobs_take_the_same_words_for_true_and_false(tmp_path):
    from loremap.search import SearchConfig

    for word, value in (("on", True), ("no", False)):
        assert SearchConfig.parse(f"abstain={word}").abstain is value
    with pytest.raises(InvalidInput, match="search config abstain='maybe': expected bool"):
        SearchConfig.parse("abstain=maybe")
    with pytest.raises(InvalidInput, match="LOREMAP_WORKERS: bad value 'two' for "
                                           r"codemap.workers \(expected int\)"):
        load_settings(None, {"LOREMAP_WORKERS": "two"})


def test_a_repository_and_its_clones_on_this_machine_get_one_project_key(tmp_path):
    from conftest import git
    from loremap.app import project_key_rule

    git(tmp_path, "init", "-q", "app")
    git(tmp_path / "app", "commit", "-q", "--allow-empty", "-m", "first")
    git(tmp_path, "clone", "-q", "app", "fresh")  # origin: the folder app
    git(tmp_path, "clone", "-q", "--bare", "app", "app.git")
    git(tmp_path, "clone", "-q", str(tmp_path / "app.git"), "via-bare")
    git(tmp_path, "clone", "-q", str(tmp_path / "fresh" / ".git"), "clone-of-clone")
    plain = load_settings(None, {})
    for name in ("app", "fresh", "via-bare", "clone-of-clone"):
        assert project_key_rule(plain, tmp_path / name) == ("app", "the folder's name"), name
    named = load_settings(None, {"LOREMAP_PROJECT_NAME": "shop"})
    assert project_key_rule(named, tmp_path / "fresh") == ("shop", "project.name")
    keyed = load_settings(None, {"LOREMAP_PROJECT_KEY": "acme/shop"})
    assert project_key_rule(keyed, tmp_path / "fresh") == ("acme/shop", "store.project")
    git(tmp_path / "app", "remote", "add", "origin", "git@github.com:acme/shop.git")
    for name in ("app", "fresh", "clone-of-clone"):  # the clones follow app to its origin
        assert project_key_rule(named, tmp_path / name) == ("github.com/acme/shop",
                                                            "the git remote origin"), name


@pytest.mark.parametrize("url", ["ssh://git@git.example.com/srv/shop.git",
                                 "git@git.example.com:/srv/shop.git",
                                 "https://user:token@GIT.example.com/srv/shop/"])
def test_an_absolute_path_on_a_server_is_one_key_in_every_url_form(repo, url):
    from conftest import git
    from loremap.git import origin_key

    git(repo, "remote", "add", "origin", url)
    assert origin_key(repo) == "git.example.com/srv/shop"


def test_a_clone_of_a_folder_that_moved_away_keeps_that_folder_s_name(tmp_path):
    from conftest import git
    from loremap.git import origin_folder, origin_key

    git(tmp_path, "init", "-q", "app")
    git(tmp_path / "app", "remote", "add", "origin", "../gone/shop.git")
    assert origin_key(tmp_path / "app") is None
    assert origin_folder(tmp_path / "app").name == "shop"
    git(tmp_path / "app", "remote", "set-url", "origin", str(tmp_path / "app"))  # a loop
    assert origin_key(tmp_path / "app") is None
    assert origin_folder(tmp_path / "app") == (tmp_path / "app").resolve()


def test_settings_written_together_are_all_written_or_none(tmp_path):
    from loremap.errors import InvalidInput
    from loremap.use.settings import write_settings

    config = tmp_path / "config.toml"
    config.write_text("# kept\nsearch = 3\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"\[search\] is not a table"):
        write_settings(config, {"verify.judge": "x", "search.tuning": "coverage=0.2"})
    assert config.read_text(encoding="utf-8") == "# kept\nsearch = 3\n"
    config.write_text("# kept\n", encoding="utf-8")
    write_settings(config, {"search.tuning": "coverage=0.2", "search.calibrated": "today"})
    text = config.read_text(encoding="utf-8")
    assert text.startswith("# kept\n") and 'tuning = "coverage=0.2"' in text
    assert 'calibrated = "today"' in text
