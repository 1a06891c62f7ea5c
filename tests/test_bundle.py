"""`loremap bundle`: the Claude Desktop extension. Its manifest passes the MCP Bundle tool's own
validator, and the files it holds run as loremap's MCP server for the chosen repository, as the
desktop client starts them (`server.py` with the dependencies installed, the bundled code first
on the path)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import loremap
from conftest import run_cli_process
from npm_tools import npm_tool


@pytest.fixture
def bundle(tmp_path) -> Path:
    out = tmp_path / "out" / "loremap.mcpb"
    done = run_cli_process("bundle", "--output", str(out), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["path"] == str(out) and report["files"] > 100
    return out


def test_the_bundle_holds_the_manifest_the_code_and_no_bytecode(bundle, tmp_path):
    with zipfile.ZipFile(bundle) as archive:
        names = archive.namelist()
        manifest = json.loads(archive.read("manifest.json"))
        project = archive.read("pyproject.toml").decode()
    assert {"manifest.json", "pyproject.toml", "server.py", "src/loremap/__init__.py",
            "src/loremap/mcp/server.py", "src/loremap/py.typed"} <= set(names)
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert manifest["version"] == loremap.__version__
    assert manifest["server"]["type"] == "uv" and manifest["server"]["entry_point"] == "server.py"
    assert manifest["server"]["mcp_config"]["env"] == {
        "LOREMAP_PROJECT_DIR": "${user_config.project}"}
    assert [t["name"] for t in manifest["tools"]] == [
        "recall", "remember", "read", "map", "handoff", "forget", "outcome", "related"]
    # The dependencies are loremap's own, without the extras.
    assert '"mcp<3,>=2.3"' in project and "numpy" not in project and "pytest" not in project
    # Built twice from the same code: the same bytes.
    again = tmp_path / "again.mcpb"
    assert run_cli_process("bundle", "-o", str(again), cwd=tmp_path).returncode == 0
    assert again.read_bytes() == bundle.read_bytes()


def test_the_mcp_bundle_tool_validates_the_manifest(bundle, tmp_path):
    mcpb = npm_tool("mcpb")
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(unpacked)
    done = subprocess.run([str(mcpb), "validate", str(unpacked / "manifest.json")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "valid" in (done.stdout + done.stderr).lower()


def test_the_bundled_files_serve_the_chosen_repository(bundle, tmp_path, project, cli,
                                                      monkeypatch):
    """The desktop client's start, minus uv's install (the dependencies are this venv's): the
    manifest's command line with its variables filled in, `server.py` from the unpacked bundle.
    The bundled copy is the code that runs: its version, changed here, is the server's."""
    assert cli("remember", "-t", "gotcha", "--title", "Tokens expire after an hour",
               "-m", "Refresh the login token before it expires.").code == 0
    unpacked = tmp_path / "installed"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(unpacked)
        manifest = json.loads(archive.read("manifest.json"))
    init = unpacked / "src" / "loremap" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8").replace(
        f'"{loremap.__version__}"', '"9.9.9-bundled"'), encoding="utf-8")
    config = manifest["server"]["mcp_config"]
    args = [a.replace("${__dirname}", str(unpacked)) for a in config["args"]]
    assert args[:3] == ["run", "--directory", str(unpacked)]
    env = {k: v.replace("${user_config.project}", str(project)) for k, v in config["env"].items()}

    monkeypatch.setattr(sys, "stderr", sys.__stderr__)  # the SDK hands it to the server
    import anyio
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=[args[3]], cwd=str(unpacked),
        env={**os.environ, "PYTHONPATH": "", **env})

    async def session() -> tuple[str, list[str], str]:
        async with Client(params) as client:
            version = client.server_info.version
            tools = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("recall", {"query": "login token expiry"})
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            return version, tools, block.text

    version, tools, recalled = anyio.run(session)
    assert version == "9.9.9-bundled"
    assert tools == [t["name"] for t in manifest["tools"]]
    assert "Tokens expire after an hour" in recalled


def test_a_folder_as_output_is_refused_in_one_line(tmp_path):
    done = run_cli_process("bundle", "--output", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"loremap: error: --output {tmp_path}: is a folder; name the .mcpb file to write"]
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def uv(tmp_path_factory) -> Path:
    """uv from PyPI, as the desktop client has it (skipped when PyPI cannot be reached)."""
    venv = tmp_path_factory.mktemp("uv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "uv"],
                          capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.skip(f"uv could not be installed from PyPI: {done.stderr.strip()[-300:]}")
    return venv / "bin" / "uv"


@pytest.mark.slow
def test_uv_installs_the_bundle_and_serves_the_repository(bundle, tmp_path, project, cli, uv,
                                                         monkeypatch):
    """The whole start of the desktop client: uv reads the bundle's pyproject, installs
    loremap's dependencies from PyPI into the bundle's own environment and runs the manifest's
    command; the SDK's client then recalls a note of the chosen repository."""
    assert cli("remember", "-t", "decision", "--title", "Sessions are signed cookies",
               "-m", "The session lives in a signed cookie, not in the database.").code == 0
    unpacked = tmp_path / "installed"
    with zipfile.ZipFile(bundle) as archive:
        archive.extractall(unpacked)
        config = json.loads(archive.read("manifest.json"))["server"]["mcp_config"]
    cache = Path(os.path.expanduser("~")).parent / "uv-cache"  # HOME is a tmp folder here
    env = {**os.environ, "PYTHONPATH": "", "UV_CACHE_DIR": str(cache),
           **{k: v.replace("${user_config.project}", str(project))
              for k, v in config["env"].items()}}
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)
    import anyio
    import mcp_types as types
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    assert config["command"] == "uv"
    params = StdioServerParameters(
        command=str(uv), args=[a.replace("${__dirname}", str(unpacked)) for a in config["args"]],
        env=env)

    async def session() -> str:
        async with Client(params, read_timeout_seconds=600) as client:
            result = await client.call_tool("recall", {"query": "where does the session live"})
            block = result.content[0]
            assert isinstance(block, types.TextContent)
            return block.text

    assert "Sessions are signed cookies" in anyio.run(session)
    assert (unpacked / ".venv").is_dir()  # uv's environment, beside the bundled code


def test_the_registry_description_matches_the_package():
    """server.json as the MCP registry checks it: one slash in the name, a description of at
    most 100 characters, the package's own name and version, and the README naming the server
    (the registry's proof that the PyPI package belongs to it)."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    server = json.loads((root / "server.json").read_text(encoding="utf-8"))
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert server["name"].count("/") == 1
    assert len(server["description"]) <= 100
    assert server["version"] == loremap.__version__
    (package,) = server["packages"]
    assert package["registryType"] == "pypi" and package["identifier"] == project["name"]
    assert package["version"] == loremap.__version__
    assert package["transport"] == {"type": "stdio"}
    assert [a["value"] for a in package["packageArguments"]] == ["serve"]
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert f"<!-- mcp-name: {server['name']} -->" in readme
