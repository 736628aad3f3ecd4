"""parse_selector's memo holds every HPA's selector at 50,000 HPAs (issue 17, goal 1).

The syncs visit the HPAs in a cycle, so a memo smaller than the number of distinct
selector texts misses on every lookup; this checks the second pass is all hits.
"""

from __future__ import annotations

from hpactl.model.selectors import parse_selector


def test_a_second_pass_over_50000_selectors_hits_the_memo_every_time() -> None:
    texts = [f"app=app{i},tier in (web)" for i in range(50_000)]
    for text in texts:
        parse_selector(text)
    before = parse_selector.cache_info()
    for text in texts:
        parse_selector(text)
    after = parse_selector.cache_info()
    assert after.misses == before.misses
    assert after.hits - before.hits == len(texts)
