"""The sites: and multisite: scenario sections (spec/sites)."""

from __future__ import annotations

import pytest

from clusterwright.errors import ScenarioError
from clusterwright.spec.scenario import loads_scenario

BASE = """name: "s"
workloads:
  - {name: "t", kind: "training", model: "llama-3.1-8b", tokens: 1.0e12, gpus: 64}
"""


def test_two_sites_with_power_and_wan_links_parse() -> None:
    sc, _ = loads_scenario(BASE + """sites:
  - {name: "a", power_mw: 10, wan_gbps: 100}
  - {name: "b", power_mw: 12, wan_gbps: 100, latency_ms: 30}
multisite: {method: "streaming", inner_steps: 100, fragments: 4, bits: 4}
""")
    assert [s.name for s in sc.sites] == ["a", "b"]
    assert sc.multisite.method == "streaming"


@pytest.mark.parametrize("sites, needle", [
    ('  - {name: "a", power_mw: 10, wan_gbps: 100}\n  - {name: "b", wan_gbps: 100}\n',
     "sites[1].power_mw (line 6)"),
    ('  - {name: "a", power_mw: 10, wan_gbps: 100}\n  - {name: "b", power_mw: 0, wan_gbps: 1}\n',
     "sites[1].power_mw (line 6)"),
    ('  - {name: "a", power_mw: 10, wan_gbps: 100}\n  - {name: "b", power_mw: 10}\n',
     "sites[1] (line 6): site 'b' has no WAN link"),
    ('  - {name: "a", power_mw: 10, wan_gbps: 100}\n  - {name: "a", power_mw: 10, wan_gbps: 1}\n',
     "sites[1].name (line 6)"),
])
def test_a_site_without_power_or_wan_link_names_the_field_and_line(sites: str, needle: str
                                                                   ) -> None:
    with pytest.raises(ScenarioError) as err:
        loads_scenario(BASE + "sites:\n" + sites)
    assert needle in str(err.value)


def test_streaming_fragments_must_divide_the_outer_period() -> None:
    with pytest.raises(ScenarioError, match=r"multisite\.fragments"):
        loads_scenario(BASE + "multisite: {method: streaming, inner_steps: 100, fragments: 3}\n")


TWO = """sites:
  - {name: "a", power_mw: 10, wan_gbps: 100}
  - {name: "b", power_mw: 12, wan_gbps: 100}
"""


@pytest.mark.parametrize("extra, needle", [
    ("  - {name: \"c\", power_mw: 1, wan_gbps: 1}\n",
     "workloads[0].gpus (line 3): 64 GPUs do not split evenly over the 3 sites"),
    ("multisite: {method: streaming, inner_steps: 100, fragments: 4, overlap_steps: 30}\n",
     "multisite.overlap_steps (line 7)"),
    ("multisite: {method: diloco, fragments: 4}\n", "multisite.fragments (line 7)"),
])
def test_a_split_the_sites_cannot_make_names_the_field_and_line(extra: str, needle: str
                                                               ) -> None:
    """Checked when the scenario loads, so `plan` exits 2 instead of writing a blueprint that
    carries the error only inside its multi-site section."""
    with pytest.raises(ScenarioError) as err:
        loads_scenario(BASE + TWO + extra)
    assert needle in str(err.value)
