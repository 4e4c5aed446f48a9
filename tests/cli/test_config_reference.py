"""README's configuration reference is generated from conf/: fail when they drift."""
from seglog.config_reference import README, readme_section, render


def test_readme_configuration_reference_matches_conf():
    assert readme_section(README.read_text(encoding="utf-8")) == render(), (
        "README.md's configuration reference is out of date: run `python -m seglog.config_reference --write`")


def test_reference_lists_every_topic_key():
    from seglog.conf.topic_config import RULES

    table = render()
    for key in RULES:
        assert f"`{key}`" in table
