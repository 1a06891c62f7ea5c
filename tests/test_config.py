"""Settings, per-user paths and project discovery."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git
from loremap.config import (
    SETTINGS,
    UserPaths,
    find_project_root,
    head_commit,
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


def test_head_commit_reads_git_directly_and_matches_git(repo):
    expected = git(repo, "rev-parse", "--short=7", "HEAD").strip()
    assert head_commit(repo) == expected
    git(repo, "pack-refs", "--all")
    assert head_commit(repo) == expected
    git(repo, "checkout", "-q", "--detach")
    assert head_commit(repo) == expected


def test_head_commit_is_none_before_the_first_commit(tmp_path):
    git(tmp_path, "init", "-q", "fresh")
    assert head_commit(tmp_path / "fresh") is None


def test_the_settings_doc_is_generated_from_the_table():
    text = (DOCS / "settings.md").read_text(encoding="utf-8")
    assert text == settings_markdown(), "regenerate: python -m loremap.config > docs/settings.md"
    for setting in SETTINGS:
        assert setting.env in text
