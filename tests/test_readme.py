"""The README's quickstart block runs and prints exactly the output it shows."""

import contextlib
import io
import re
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
