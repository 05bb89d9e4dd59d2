"""Every README block that shows its output prints exactly that output, and the
installation it describes imports skcalbound from any folder."""

import ast
import builtins
import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _blocks(text, lang):
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def _fenced(text):
    """``(language, body, prose before the fence)`` for every fenced block."""
    found = re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.S)
    blocks, end = [], 0
    for match in found:
        blocks.append((match.group(1), match.group(2), text[end : match.start()]))
        end = match.end()
    return blocks


def _python_with_output():
    """Each Python block of the README with the output it shows: the ``text`` block
    that follows it when the prose between them starts with "prints", else None."""
    blocks = _fenced((ROOT / "README.md").read_text())
    for k, (lang, code, _) in enumerate(blocks):
        if lang != "python":
            continue
        shown = None
        if k + 1 < len(blocks):
            next_lang, body, prose = blocks[k + 1]
            if next_lang == "text" and prose.strip().startswith("prints"):
                shown = body
        yield code, shown


def _run(code):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {})
    return out.getvalue()


_PYTHON_BLOCKS = list(_python_with_output())


@pytest.mark.parametrize(
    "code, shown", _PYTHON_BLOCKS, ids=[f"block{k}" for k in range(len(_PYTHON_BLOCKS))]
)
def test_every_readme_block_prints_what_it_shows(code, shown):
    # A block followed by "prints" and a text block prints exactly that text; a
    # ``print(...)  # output`` line prints the start of its comment.
    inline = [
        line.split("  # ", 1)[1]
        for line in code.splitlines()
        if line.startswith("print(") and "  # " in line
    ]
    if shown is None and not inline:
        pytest.skip("the block shows no output")
    printed = _run(code)
    if shown is not None:
        assert printed == shown
    lines = printed.splitlines()
    assert len(lines) >= len(inline)
    for comment, line in zip(inline, lines[-len(inline) :] if inline else []):
        assert comment.startswith(line), (line, comment)


def test_readme_shows_no_machine_dependent_digest():
    # A fingerprint digest hashes float64 bytes: a different libm (perturb_scores'
    # transcendental functions) gives another digest, so the README shows none.
    readme = (ROOT / "README.md").read_text()
    assert not re.search(r"^[0-9a-f]{16,64}$", readme, flags=re.M)


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
