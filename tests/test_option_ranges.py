"""Every numeric option is range-checked and contradictory options are refused
(issue 18): one line naming the option(s) and, for numbers, the allowed range."""
from __future__ import annotations

import pytest

from polymagic.errors import OptionsError
from polymagic.options import parse_options

BAD_NUMBERS = {
    "--shared-mem 0.5": ("--shared-mem", "whole number of bytes"),
    "--shared-mem 0.3KB": ("--shared-mem", "whole number of bytes"),
    "--shared-mem 100GB": ("--shared-mem", "between 1 byte and 16 MB"),
    "--shared-mem 0": ("--shared-mem", "positive"),
    "--shared-mem inf": ("--shared-mem", "positive"),
    "--device-mem 2TB": ("--device-mem", "between 1 byte and 1 TB"),
    "--device-mem 0.25": ("--device-mem", "whole number of bytes"),
    "--device-mem nan": ("--device-mem", "positive"),
    "--seed -1": ("--seed", "between 0 and 18446744073709551615"),
    "--seed 18446744073709551616": ("--seed", "between 0 and"),
    "--tile 99999999999999999999": ("--tile", "from 1 to 1048576"),
    "--tile 32,0": ("--tile", "from 1 to 1048576"),
    "--tile 64,64:2000000": ("--tile", "from 1 to 1048576"),
    "--time-tiling 4,2000000": ("--time-tiling", "from 1 to 1048576"),
    "--block 2048": ("--block", "from 1 to 1024"),
    "--block 1,1,128": ("--block", "at most 64"),
    "--block 32,64": ("--block", "at most 1024"),
    "--localise t:5000": ("--localise", "from 1 to 1024"),
    "--autotune-candidates 0": ("--autotune-candidates", "between 1 and 10000"),
    "--max-emulator-instances 0": ("--max-emulator-instances", "between 1 and"),
    "--max-cpu-instances nan": ("--max-cpu-instances", "between 1 and"),
    "--max-memory 0": ("--max-memory", "positive"),
    "--max-memory 2048TB": ("--max-memory", "between 1 byte and"),
    "--autotune-candidates 100000": ("--autotune-candidates", "between 1 and 10000"),
    "--autotune-budget 0": ("--autotune-budget", "positive"),
    "--autotune-budget 1e9": ("--autotune-budget", "at most 604800"),
    "--delta 2": ("--delta", "[0, 1]"),
}

CONTRADICTIONS = {
    "--localise t --no-localise": ("--localise t", "--no-localise"),
    "--no-localise --reorg modulo": ("--reorg modulo", "--no-localise"),
    "--vector --no-vector": ("--vector", "--no-vector"),
    "--shared all --no-shared": ("--shared all", "--no-shared"),
    "--time-tiling 4 --no-time-tiling": ("--time-tiling 4", "--no-time-tiling"),
    "--json --explore": ("--json", "--explore"),
}


@pytest.mark.parametrize("line", sorted(BAD_NUMBERS))
def test_numeric_option_out_of_range(line):
    with pytest.raises(OptionsError) as e:
        parse_options(line)
    msg = str(e.value)
    assert "\n" not in msg
    for word in BAD_NUMBERS[line]:
        assert word in msg, msg


@pytest.mark.parametrize("line", sorted(CONTRADICTIONS))
def test_contradictory_options_name_both(line):
    with pytest.raises(OptionsError, match="contradictory options") as e:
        parse_options(line)
    for word in CONTRADICTIONS[line]:
        assert word in str(e.value)


@pytest.mark.parametrize("line,field,value", [
    ("--shared-mem 1.5KB", "shared_mem", 1536), ("--shared-mem 16MB", "shared_mem", 16 << 20),
    ("--device-mem 1TB", "device_mem", 1 << 40), ("--seed 18446744073709551615", "seed", 2**64 - 1),
    ("--block 1024", "block", (1024,)), ("--block 1,1,64", "block", (1, 1, 64)),
    ("--no-shared", "shared", "none"), ("--shared none --no-shared", "shared", "none"),
    ("--no-vector", "vector", False), ("--reorg modulo --localise t", "reorg", "modulo"),
    ("--tile 1048576", "tile", (1048576,))])
def test_values_at_the_limits_are_accepted(line, field, value):
    assert getattr(parse_options(line), field) == value
