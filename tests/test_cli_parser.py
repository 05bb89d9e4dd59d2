"""``skcalbound._cli._parser``: two argparse subcommands, ``certify`` the default."""

import subprocess
import sys

import pytest

from skcalbound._cli._parser import build_parser, parse_args, parse_number


@pytest.mark.parametrize(
    "argv, command, file",
    [
        (["scores.csv", "--json"], "certify", "scores.csv"),
        (["./verify"], "certify", "./verify"),  # a data file named verify
        (["certify"], "certify", "certify"),  # a file: certify is never typed
        (["verify", "record.json", "scores.csv"], "verify", "scores.csv"),
    ],
)
def test_the_subcommand_and_its_file(argv, command, file):
    args = parse_args(argv)
    assert args.command == command and args.file == file


def test_verify_takes_its_own_options_only():
    args = parse_args(["verify", "r.json", "d.csv", "--scores", "p", "--format", "csv"])
    assert (args.record, args.scores, args.format) == ("r.json", "p", "csv")
    assert not hasattr(args, "bound")


@pytest.mark.parametrize(
    "argv, usage, message",
    [
        (["d.csv", "--nonsense"], "usage: skcalbound [-h]", "unrecognized arguments"),
        (
            ["verify", "r.json", "d.csv", "--json"],
            "usage: skcalbound verify [-h]",
            "unrecognized arguments: --json",
        ),
        (
            ["d.csv", "--bound", "foo"],
            "usage: skcalbound [-h]",
            "invalid choice: 'foo'",
        ),
        ([], "usage: skcalbound [-h]", "the following arguments are required: file"),
    ],
)
def test_errors_show_the_subcommands_usage(argv, usage, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(usage) and message in err


def test_help_of_each_subcommand():
    assert build_parser().format_help().startswith("usage: skcalbound [-h]")
    verify = build_parser("verify").format_help()
    assert verify.startswith("usage: skcalbound verify [-h]") and "PARTIAL" in verify


def test_version_imports_neither_sklearn_nor_pandas():
    code = (
        "import sys\n"
        "from skcalbound._cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sklearn', 'pandas'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines()[-1] == "[]"


@pytest.mark.parametrize(
    "text, value",
    [
        ("0.015625", 2.0**-6),
        ("2**-6", 2.0**-6),
        ("2^-6", 2.0**-6),
        (" 2 ** -6 ", 2.0**-6),
        ("1e-2", 0.01),
        (".5", 0.5),
        ("0.5^2", 0.25),
        ("4**0.5", 2.0),
        ("2^+3", 8.0),
        ("-1", -1.0),
    ],
)
def test_numbers_as_the_docs_write_them(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize(
    "text, reason",
    [
        ("abc", "not a number"),
        ("2***6", "not a number"),
        ("2**", "not a number"),
        ("1/64", "not a number"),
        ("__import__('os')", "not a number"),
        ("2**-6**2", "not a number"),
        ("inf", "not a number"),
        ("nan", "not a number"),
        ("10**400", "not a finite number"),
        ("0**-1", "not a finite number"),
        ("-2**2", "write a power with an unsigned base"),
    ],
)
def test_other_numbers_are_argparse_errors(text, reason, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(
            ["x.csv", f"--h={text}"]
        )  # "--h -2**2" would read -2**2 as an option
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"skcalbound: error: argument --h: expected a number such as 0.015625, 1e-2, "
        f"2**-6 or 2^-6; got {text!r} ({reason})"
    )


@pytest.mark.parametrize("option", ["--b1", "--b2", "--L", "--V"])
def test_assumption_options_take_powers(option):
    args = parse_args(["x.csv", option, "2^5"])
    assert getattr(args, option.lstrip("-")) == 32.0
