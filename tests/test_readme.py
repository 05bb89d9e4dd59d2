"""The README's quickstart block runs and prints exactly the output it shows, and the
installation it describes imports skcalbound from any folder."""

import ast
import builtins
import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _blocks(text, lang):
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_readme_quickstart_output_is_real():
    readme = (ROOT / "README.md").read_text()
    code = _blocks(readme, "python")[0]
    shown = _blocks(readme, "text")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    assert out.getvalue() == shown


def test_readme_opens_with_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    first = _blocks(readme, "bash")[0].splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make demo", "make test"]


def test_quickstart_script_is_the_readme_block():
    readme = (ROOT / "README.md").read_text()
    script = (ROOT / "examples" / "quickstart.py").read_text()
    assert _blocks(readme, "python")[0].strip() in script


def _undefined_names(code):
    """Names a code block reads but neither imports nor assigns."""
    tree = ast.parse(code)
    defined = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = (alias.asname or alias.name for alias in node.names)
            defined |= {name.split(".")[0] for name in names}
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
    used = {
        node.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }
    return used - defined


def test_readme_python_blocks_run_as_written():
    # Every Python block can be pasted as it is: it defines or imports what it uses.
    blocks = _blocks((ROOT / "README.md").read_text(), "python")
    assert len(blocks) >= 2
    for block in blocks:
        assert _undefined_names(block) == set(), block[:200]


def test_a_folder_named_skcalbound_does_not_shadow_the_package(tmp_path):
    # A clone is a folder named skcalbound without __init__.py: Python started in its
    # parent folder found it as an empty namespace package before the editable
    # install's finder (make install now puts the clone's root on sys.path).
    (tmp_path / "skcalbound").mkdir()
    run = subprocess.run(
        [sys.executable, "-c", "import skcalbound; print(skcalbound.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    found = run.stdout.strip()
    assert found != "None", "skcalbound imported as an empty namespace package"
    assert Path(found).name == "__init__.py"
    assert Path(found).parent.parent != tmp_path
