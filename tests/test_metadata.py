"""Metadata extraction: links, shell commands and file paths out of free text."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evoclaw_memory.limits import METADATA_MAX_COMMANDS, METADATA_MAX_PATHS, METADATA_MAX_URLS
from evoclaw_memory.distill.metadata import (
    extract_metadata,
    locate_metadata,
    looks_like_command,
    merge_metadata,
    metadata_search_text,
)
from evoclaw_memory.models import Metadata

DEVSET = Path("/work/shared/eval/devset.json")


# --- URLs ----------------------------------------------------------------------------------


def test_http_urls_keep_balanced_parentheses_and_drop_sentence_punctuation():
    text = "See https://en.wikipedia.org/wiki/Foo_(bar). Also (https://example.com/x), and https://a.io/b."
    assert extract_metadata(text).urls == [
        "https://en.wikipedia.org/wiki/Foo_(bar)",
        "https://example.com/x",
        "https://a.io/b",
    ]


def test_www_and_bare_domains_are_links():
    text = "Docs at docs.python.org, code at github.com/foo/bar and www.example.com/path?q=1."
    assert extract_metadata(text).urls == [
        "docs.python.org",
        "github.com/foo/bar",
        "www.example.com/path?q=1",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "e.g. this and i.e. that",
        "edit file.py and README.md, run install.sh",
        "Python 3.11 and v1.2.3 are out",
        "ASP.NET and Node.js and Vue.js",
        "mail sam@samwhit.dev",
        "load libfoo.so from main.rs",
        "`logger.info` is code",
    ],
)
def test_no_false_positive_links(text):
    assert extract_metadata(text).urls == []


def test_links_next_to_chinese_text():
    text = "见https://docs.python.org/3/里面的说明。请看github.com/foo/bar。"
    assert extract_metadata(text).urls == ["https://docs.python.org/3/", "github.com/foo/bar"]


def test_ip_address_url_with_port_and_trailing_comma():
    text = "Proxmox web UI: https://192.168.1.20:8006, user root@pam"
    assert extract_metadata(text).urls == ["https://192.168.1.20:8006"]


# --- commands -------------------------------------------------------------------------------


def test_backticked_commands_but_not_backticked_code():
    text = "Run `pip install -r requirements.txt`, not `x = 5`; `foo` is a name and `bw unlock` a command."
    assert extract_metadata(text).commands == ["pip install -r requirements.txt", "bw unlock"]


def test_dollar_lines_and_prose_commands():
    text = (
        "$ sudo systemctl restart nginx\ngit pull --rebase and then go home\nThen run npm run build, please."
    )
    assert extract_metadata(text).commands == [
        "sudo systemctl restart nginx",
        "git pull --rebase",
        "npm run build",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "go home and make dinner",
        "git is great",
        "python scripts are fun",
        "static leases: pip .2, atlas .20",
        "top up the account",
    ],
)
def test_everyday_words_are_not_commands(text):
    assert extract_metadata(text).commands == []


def test_looks_like_command():
    assert looks_like_command("./install.sh")
    assert looks_like_command("stow nvim zsh git")
    assert looks_like_command("FOO=1 make build")
    assert not looks_like_command("/etc/hosts")  # a path, not something to run
    assert not looks_like_command("print(x)")
    assert not looks_like_command("def main")


# --- paths ----------------------------------------------------------------------------------


def test_paths_of_every_kind():
    text = (
        "Config at /etc/nginx/nginx.conf, scripts ./scripts/run.sh and ../up/x, notes in ~/notes. "
        "Code: src/main.cpp"
    )
    assert extract_metadata(text).paths == [
        "/etc/nginx/nginx.conf",
        "./scripts/run.sh",
        "../up/x",
        "~/notes",
        "src/main.cpp",
    ]


def test_not_paths():
    meta = extract_metadata("and/or, 1/2, km/h, 24/7, https://example.com/a/b and 192.168.1.0/24")
    assert meta.paths == []


def test_path_after_host_colon_and_with_placeholders():
    meta = extract_metadata("rsynced to kite:/var/www/blog; stacks in /opt/stacks/<name>/compose.yaml.")
    assert meta.paths == ["/var/www/blog", "/opt/stacks/<name>/compose.yaml"]


def test_backticked_script_is_a_command_not_a_path():
    meta = extract_metadata("set up with `./install.sh`, keys in ~/.ssh/id_ed25519.")
    assert meta.commands == ["./install.sh"]
    assert meta.paths == ["~/.ssh/id_ed25519"]


# --- dedup, order, caps ---------------------------------------------------------------------


def test_dedupe_keeps_first_seen_order():
    text = (
        "https://b.io/x then https://a.io and https://b.io/x/ again; /tmp/a /tmp/b /tmp/a; `ls -la` `ls  -la`"
    )
    meta = extract_metadata(text)
    assert meta.urls == ["https://b.io/x", "https://a.io"]
    assert meta.paths == ["/tmp/a", "/tmp/b"]
    assert meta.commands == ["ls -la"]


def test_caps():
    urls = " ".join(f"https://site{i}.com" for i in range(15))
    commands = "\n".join(f"$ echo {i}" for i in range(8))
    paths = " ".join(f"/srv/data{i}" for i in range(14))
    meta = extract_metadata(f"{urls}\n{commands}\n{paths}")
    assert meta.urls == [f"https://site{i}.com" for i in range(METADATA_MAX_URLS)]
    assert meta.commands == [f"echo {i}" for i in range(METADATA_MAX_COMMANDS)]
    assert meta.paths == [f"/srv/data{i}" for i in range(METADATA_MAX_PATHS)]


def test_empty_input():
    assert extract_metadata("") == Metadata()
    assert locate_metadata("") == []
    assert metadata_search_text(Metadata()) == ""


def test_locate_metadata_gives_offsets():
    text = "see https://a.io and /etc/hosts"
    assert locate_metadata(text) == [(4, "urls", "https://a.io"), (21, "paths", "/etc/hosts")]


def test_merge_metadata_is_a_capped_union():
    a = Metadata(urls=[f"https://a{i}.com" for i in range(8)], commands=["ls"], paths=["/a"])
    b = Metadata(
        urls=["https://a0.com", "https://b.com", "https://c.com", "https://d.com"], paths=["/a", "/b"]
    )
    merged = merge_metadata(a, b)
    assert merged.urls == [f"https://a{i}.com" for i in range(8)] + ["https://b.com", "https://c.com"]
    assert merged.commands == ["ls"]
    assert merged.paths == ["/a", "/b"]


def test_search_text_holds_url_fragments():
    meta = Metadata(
        urls=["https://github.com/samwhit/garden-bot"], commands=["pio run"], paths=["~/dotfiles/nvim"]
    )
    words = metadata_search_text(meta).split()
    for fragment in ("github.com", "samwhit", "garden-bot", "pio run".split()[0], "dotfiles", "nvim"):
        assert fragment in words


# --- realistic text -------------------------------------------------------------------------


@pytest.mark.skipif(not DEVSET.exists(), reason="shared eval devset not available")
def test_devset_metadata_found_in_fact_texts():
    facts = json.loads(DEVSET.read_text(encoding="utf-8"))["facts"]
    checked = 0
    for fact in facts:
        found = extract_metadata(fact["text"])
        for kind in ("urls", "commands", "paths"):
            for value in fact["metadata"][kind]:
                if value in fact["text"]:  # some devset links live only in metadata
                    assert value in getattr(found, kind), (fact["id"], kind, value)
                    checked += 1
    assert checked >= 40


# --- speed ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "a." * 500_000,
        "/a" * 500_000,
        "`" * 1_000_000,
        "https://" + "a" * 999_990,
        "run git pull\n" * 75_000,
        "x: a" * 250_000,
        "~/" * 500_000,
        "(" * 1_000_000,
    ],
    ids=["dots", "slashes", "backticks", "long-url", "commands", "colons", "tildes", "parens"],
)
def test_one_megabyte_of_adversarial_text_is_linear(text):
    started = time.process_time()
    meta = extract_metadata(text)
    assert time.process_time() - started < 2.0
    assert len(meta.urls) <= METADATA_MAX_URLS


# --- properties -----------------------------------------------------------------------------

_pieces = st.sampled_from(
    [
        "https://x.com/a(b)",
        "www.foo.io",
        "`git pull`",
        "$ ls -la\n",
        "~/x",
        "./run.sh",
        "/etc/hosts",
        "e.g.",
        "3.11",
        "github.com/a",
        " ",
        "\n",
        ".",
        ",",
        ")",
        "(",
        "陈莉",
        "run pip install x",
        "sam@x.dev",
    ]
)
_texts = st.lists(st.one_of(_pieces, st.text(max_size=12)), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(_texts)
def test_extraction_never_breaks_its_contract(text):
    meta = extract_metadata(text)
    assert len(meta.urls) <= METADATA_MAX_URLS
    assert len(meta.commands) <= METADATA_MAX_COMMANDS
    assert len(meta.paths) <= METADATA_MAX_PATHS
    for values in (meta.urls, meta.commands, meta.paths):
        assert len(values) == len(set(values))
        assert all(values)
    # Links and paths are taken verbatim from the text.
    assert all(url in text for url in meta.urls)
    assert all(path in text for path in meta.paths)
    assert merge_metadata(meta, meta) == meta
