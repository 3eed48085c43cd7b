# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
import pytest

from swift_mass.control import classify, controller, monitor

SETTINGS = controller.DEFAULT_SETTINGS._replace(
    substores={'read': 'fast', 'write': 'bulk', 'mixed': ''},
    window=60, margin=0.2, holdoff=600)
# The first verdict on a method SETTINGS gave at 0: in force at every
# worker within an interval (5 s), then a warm-up of a window (60 s), then
# a whole window judged (60 s); the next a window later.
FIRST_VERDICT = 125
NEXT_VERDICT = FIRST_VERDICT + 60


def figures(gets=0, puts=0, get_ms=10.0, put_ms=10.0):
    buckets = [monitor.request_counts('GET', 200, 0, 0, get_ms / 1000.0)
               for _ in range(gets)]
    buckets += [monitor.request_counts('PUT', 201, 0, 0, put_ms / 1000.0)
                for _ in range(puts)]
    return monitor.figures(buckets)


def test_first_decision_inserts_a_policy():
    entry, reasons = controller.decide('AUTH_a', None, figures(95, 5),
                                       1000, SETTINGS)
    assert entry.cls == 'read'
    assert (entry.substore, entry.method) == ('fast', 'cache')
    assert entry.since == 1000 and not entry.validated
    assert entry.baseline_ms == pytest.approx(10.0)
    assert reasons == ["AUTH_a: unknown -> read (read share 0.95 over 100 "
                       "requests): substore 'fast', method cache"]


@pytest.mark.parametrize('gets, puts, cls, ring, method', [
    (700, 300, 'mixed', '', 'none'),      # OLTP: merge is opt-in
    (950, 50, 'read', 'fast', 'cache'),   # web file server
    (1000, 0, 'read', 'fast', 'cache'),   # decision support
    (50, 950, 'write', 'bulk', 'batch'),  # online game
])
def test_paper_profiles_get_their_policy(gets, puts, cls, ring, method):
    entry, _ = controller.decide('t', None, figures(gets, puts), 0, SETTINGS)
    assert (entry.cls, entry.substore, entry.method) == \
        (cls, ring, method)


def test_too_few_requests_no_entry():
    assert controller.decide('t', None, figures(10, 0), 0, SETTINGS) == \
        (None, [])


def test_unchanged_class_keeps_entry():
    entry, _ = controller.decide('t', None, figures(95, 5), 0, SETTINGS)
    again, reasons = controller.decide('t', entry, figures(90, 10), 30,
                                       SETTINGS)
    assert again is entry and reasons == []


def test_changed_class_replaces_policy():
    entry, _ = controller.decide('t', None, figures(95, 5), 0, SETTINGS)
    entry, reasons = controller.decide('t', entry, figures(5, 95), 100,
                                       SETTINGS)
    assert (entry.cls, entry.method, entry.since) == \
        ('write', 'batch', 100)
    assert reasons[0].startswith('t: read -> write')


def test_a_method_the_mapping_changed_follows_for_a_class_that_stays():
    """An operator changes a class's method in [filter:mass] and reloads
    (mixed_method from merge back to none, its default; read_method to
    none to take tenants off the cache): an unpinned tenant whose class
    stays gets the new method at its next decision, judged afresh.  It
    kept the old one for as long as its class stayed: merge went on
    serving a mixed tenant's reads after mixed_method = none."""
    merging = SETTINGS._replace(methods=dict(SETTINGS.methods,
                                             mixed='merge'))
    entry, _ = controller.decide('t', None, figures(50, 50), 0, merging)
    assert entry.method == 'merge'
    entry = entry.replace(validated=True)
    again, reasons = controller.decide('t', entry, figures(50, 50), 100,
                                       SETTINGS)
    assert (again.cls, again.method, again.since) == ('mixed', 'none', 100)
    assert reasons == ["t: method none instead of merge (the mapping's "
                       "for mixed)"]
    # and a method given by the mapping is judged as a new one
    entry, _ = controller.decide('t', None, figures(95, 5), 0,
                                 SETTINGS._replace(methods=dict(
                                     SETTINGS.methods, read='none')))
    assert entry.method == 'none'
    entry, reasons = controller.decide('t', entry, figures(95, 5), 100,
                                       SETTINGS)
    assert (entry.method, entry.validated) == ('cache', False)
    assert entry.baseline_ms == pytest.approx(10.0)
    assert reasons == ["t: method cache instead of none (the mapping's "
                       "for read)"]


def test_a_method_held_off_is_not_given_back_by_the_mapping():
    """A method validation deleted is not the mapping's change: the entry
    keeps 'none' (until its class changes after the hold-off)."""
    entry, _ = controller.decide('t', None, figures(95, 5, get_ms=10),
                                 0, SETTINGS)
    entry = deleted_cache(entry)
    kept, reasons = controller.decide('t', entry, figures(95, 5), 2000,
                                      SETTINGS)
    assert kept is entry and reasons == []


def test_validation_keeps_a_policy_that_helps():
    entry, _ = controller.decide('t', None, figures(95, 5, get_ms=20),
                                 0, SETTINGS)
    # not before the warm-up and a whole window after it have passed
    same, reasons = controller.decide('t', entry, figures(95, 5, get_ms=50),
                                      FIRST_VERDICT - 1, SETTINGS)
    assert same is entry and reasons == []
    entry, reasons = controller.decide('t', entry, figures(95, 5, get_ms=5),
                                       FIRST_VERDICT, SETTINGS)
    assert entry.validated and entry.method == 'cache'
    assert 'validated' in reasons[0]
    # validated once; later windows do not re-judge it
    assert controller.decide('t', entry, figures(95, 5, get_ms=500), 300,
                             SETTINGS) == (entry, [])


def test_with_no_margin_validation_keeps_only_a_method_that_helped():
    settings = SETTINGS._replace(margin=0.0)
    entry, _ = controller.decide('t', None, figures(95, 5, get_ms=10),
                                 0, settings)
    helped, _ = controller.decide('t', entry, figures(95, 5, get_ms=9),
                                  FIRST_VERDICT, settings)
    assert helped.validated and helped.method == 'cache'
    # 10 % slower, twice
    entry, _ = controller.decide('t', entry, figures(95, 5, get_ms=11),
                                 FIRST_VERDICT, settings)
    deleted, reasons = controller.decide(
        't', entry, figures(95, 5, get_ms=11), NEXT_VERDICT, settings)
    assert (deleted.method, deleted.holdoff) == (
        'none', {'cache': NEXT_VERDICT + 600})
    assert reasons == ['t: deleted: cache made latency worse in 2 '
                       'validation windows in a row: 11.0 ms against 10.0 '
                       'ms before (margin 0%)']


def test_validation_deletes_a_policy_that_hurts_and_holds_it_off():
    entry, _ = controller.decide('t', None, figures(95, 5, get_ms=10),
                                 0, SETTINGS)
    # 12 ms is within the 20 % margin: kept
    kept, _ = controller.decide('t', entry, figures(95, 5, get_ms=12),
                                FIRST_VERDICT, SETTINGS)
    assert kept.method == 'cache' and kept.validated
    entry = deleted_cache(entry)
    assert entry.method == 'none' and entry.cls == 'read'
    assert entry.holdoff == {'cache': NEXT_VERDICT + 600}
    assert entry.reason == ('cache made latency worse in 2 validation '
                            'windows in a row: 13.0 ms against 10.0 ms '
                            'before (margin 20%)')
    # the tenant turns mixed, then read again within the hold-off
    entry, _ = controller.decide('t', entry, figures(50, 50), 200, SETTINGS)
    assert (entry.cls, entry.method) == ('mixed', 'none')
    entry, reasons = controller.decide('t', entry, figures(95, 5), 300,
                                       SETTINGS)
    assert (entry.cls, entry.method) == ('read', 'none')
    assert 'cache held off' in reasons[0]
    # after the hold-off, read gets cache again
    entry, _ = controller.decide('t', entry, figures(50, 50), 800, SETTINGS)
    entry, _ = controller.decide('t', entry, figures(95, 5), 900, SETTINGS)
    assert (entry.method, entry.holdoff) == ('cache', {})
    assert entry.baseline_ms == pytest.approx(10.0)


def deleted_cache(entry, get_ms=13):
    """``entry`` (cache, decided at 0, baseline 10 ms) after two verdicts
    of ``get_ms`` over the margin: deleted at NEXT_VERDICT."""
    for now in (FIRST_VERDICT, NEXT_VERDICT):
        entry, _ = controller.decide('t', entry, read_figures(get_ms), now,
                                     SETTINGS)
    return entry


def test_pin_wins_and_is_never_overridden():
    pin = {'class': 'write'}
    entry, reasons = controller.decide('t', None, figures(100, 0), 0,
                                       SETTINGS, pin=pin)
    assert (entry.cls, entry.substore, entry.method) == \
        ('write', 'bulk', 'batch')
    assert entry.pinned and reasons
    for now in (60, 120, 1000):
        again, reasons = controller.decide('t', entry, figures(100, 0),
                                           now, SETTINGS, pin=pin)
        assert again is entry and reasons == []


def test_pin_may_name_ring_and_method():
    entry, _ = controller.decide(
        't', None, figures(), 0, SETTINGS,
        pin={'class': 'read', 'ring': 'standard', 'method': 'none'})
    assert (entry.substore, entry.method) == ('standard', 'none')


def test_unpinned_tenant_is_classified_afresh():
    pinned, _ = controller.decide('t', None, figures(), 0, SETTINGS,
                                  pin={'class': 'write'})
    entry, reasons = controller.decide('t', pinned, figures(100, 0), 10,
                                       SETTINGS)
    assert entry.cls == 'read' and not entry.pinned
    assert reasons[0].startswith('t: write -> read')


def test_dominant_latency():
    f = figures(10, 30, get_ms=2, put_ms=20)
    assert controller.dominant_latency(classify.READ, f) == 2
    assert controller.dominant_latency(classify.WRITE, f) == 20
    assert controller.dominant_latency(classify.MIXED, f) == \
        pytest.approx((10 * 2 + 30 * 20) / 40.0)
    assert controller.dominant_latency(classify.WRITE, figures(10, 0)) is None


def test_validation_waits_for_traffic():
    entry, _ = controller.decide('t', None, figures(95, 5), 0, SETTINGS)
    quiet = figures()
    assert controller.decide('t', entry, quiet, FIRST_VERDICT,
                             SETTINGS) == (entry, [])
    # HEADs only: no GET to judge a reader's cache by
    heads = monitor.figures([monitor.request_counts('HEAD', 200, 0, 0, 0.01)
                             for _ in range(60)])
    assert controller.decide('t', entry, heads, FIRST_VERDICT,
                             SETTINGS) == (entry, [])
    # an entry saved before baselines were checked, without one
    no_baseline = entry.replace(baseline_ms=None)
    kept, reasons = controller.decide('t', no_baseline, figures(95, 5),
                                      FIRST_VERDICT, SETTINGS)
    assert kept.validated and 'no baseline' in reasons[0]


def test_reference_latency_is_the_other_tenants():
    mine = figures(95, 5, get_ms=100)
    theirs = figures(50, 50, get_ms=20, put_ms=40)
    totals = controller.latency_totals([mine, theirs])
    assert totals['GET'] == (pytest.approx(95 * 100 + 50 * 20), 145)
    # readers are judged by GETs, writers by PUTs, mixed by everything
    assert controller.reference_latency('read', totals, mine, 10) == \
        pytest.approx(20.0)
    assert controller.reference_latency('write', totals, mine, 10) == \
        pytest.approx(40.0)
    assert controller.reference_latency('mixed', totals, mine, 10) == \
        pytest.approx(30.0)
    # too few requests by the others stand for nothing
    assert controller.reference_latency('read', totals, mine, 51) is None
    alone = controller.latency_totals([mine])
    assert controller.reference_latency('read', alone, mine, 1) is None


def test_validation_discounts_a_load_change_everyone_saw():
    # the demo deleted batch when the whole cluster got busier: 29.7 ms
    # before, 131 ms after, while the other tenants slowed as much
    entry, _ = controller.decide('t', None, figures(5, 95, put_ms=30), 0,
                                 SETTINGS, reference=lambda cls: 25.0)
    assert entry.baseline_reference_ms == 25.0
    kept, reasons = controller.decide(
        't', entry, figures(5, 95, put_ms=131), FIRST_VERDICT, SETTINGS,
        reference=lambda cls: 120.0)
    assert kept.method == 'batch' and kept.validated
    assert reasons == ["t: batch validated: 1.09 against 1.20 times the "
                       "other tenants' latency (131.0 ms against 30.0 ms "
                       "before; theirs 120.0 ms, before 25.0 ms)"]
    # slower than the others by more than the margin, twice: deleted
    for now in (FIRST_VERDICT, NEXT_VERDICT):
        entry, reasons = controller.decide(
            't', entry, figures(5, 95, put_ms=131), now, SETTINGS,
            reference=lambda cls: 60.0)
    assert entry.method == 'none'
    assert 'in a row: 2.18 against 1.20 times' in reasons[0]


def test_validation_without_a_reference_then_compares_absolutes():
    entry, _ = controller.decide('t', None, figures(5, 95, put_ms=30), 0,
                                 SETTINGS, reference=lambda cls: None)
    for now in (FIRST_VERDICT, NEXT_VERDICT):
        entry, reasons = controller.decide(
            't', entry, figures(5, 95, put_ms=131), now, SETTINGS,
            reference=lambda cls: 120.0)
    assert entry.method == 'none'
    assert '131.0 ms against 30.0 ms before' in reasons[0]


def test_an_idle_tenant_keeps_its_entry_unless_pinned_or_unpinned():
    """keeps_when_idle, which lets the leader skip the idle, holds exactly
    when decide keeps the entry of a tenant without requests."""
    idle = monitor.figures([])
    entries = [None]
    for cls in classify.CLASSES + (classify.UNKNOWN,):
        for method in ('cache', 'batch', 'none'):
            for validated in (True, False):
                for since in (0, 1000 - SETTINGS.window, 995):
                    for pinned in (True, False):
                        entries.append(controller.new_entry(
                            cls, SETTINGS, since, 'x').replace(
                            method=method, validated=validated,
                            pinned=pinned, baseline_ms=10.0))
    kept = 0
    for previous in entries:
        for pin in (None, {'class': 'read'}):
            entry, reasons = controller.decide(
                'AUTH_t', previous, idle, 1000, SETTINGS, pin=pin,
                reference=lambda cls: 20.0)
            unchanged = entry is previous and reasons == []
            if controller.keeps_when_idle(previous, pin):
                assert unchanged, (previous, pin)
                kept += 1
            else:
                assert previous is None or not unchanged or (
                    pin and previous.pinned), (previous, pin)
    assert kept == (len(entries) - 1) // 2


def test_a_pin_keeps_the_hold_offs_for_after_it():
    entry, _ = controller.decide('t', None, figures(95, 5, get_ms=10),
                                 0, SETTINGS)
    entry = deleted_cache(entry)
    held = {'cache': NEXT_VERDICT + 600}
    assert entry.holdoff == held
    pinned, _ = controller.decide('t', entry, figures(95, 5), 200, SETTINGS,
                                  pin={'class': 'read', 'method': 'cache'})
    assert pinned.method == 'cache' and pinned.holdoff == held
    # unpinned within the hold-off: the cache a pin ran is not given back
    # (and not judged against a window in which it ran)
    entry, reasons = controller.decide('t', pinned, figures(95, 5), 300,
                                       SETTINGS)
    assert (entry.cls, entry.method) == ('read', 'none')
    assert 'cache held off' in reasons[0]
    # an expired hold-off is not carried into a pin
    pinned, _ = controller.decide('t', entry, figures(95, 5), 800, SETTINGS,
                                  pin={'class': 'read'})
    assert pinned.holdoff == {}


# --- validation: the baseline, the warm-up, the verdict -----------------

def read_figures(get_ms):
    return figures(95, 5, get_ms=get_ms)


def run(entry, start, stop, get_ms, settings, step=5, reference=None):
    """decide at every tick (``step`` seconds) from ``start`` to ``stop``
    (excluded) with the tenant's GETs taking ``get_ms`` (a number, or a
    function of the time); the last entry and every reason."""
    reasons = []
    for now in range(start, stop, step):
        ms = get_ms(now) if callable(get_ms) else get_ms
        entry, said = controller.decide('t', entry, read_figures(ms), now,
                                        settings, reference=reference)
        reasons += said
    return entry, reasons


def test_an_unpin_does_not_judge_the_pinned_cache_against_itself():
    """The benchmark's defect: an operator pinned a reader to cache, then
    removed the pin; the window before the unpin is the warm pinned
    cache's, the next the cold start of a new container (every GET a miss
    and a fill).  A method that works must not be dropped for it."""
    settings = controller.DEFAULT_SETTINGS
    pinned, _ = controller.decide('t', None, read_figures(10), 0, settings,
                                  pin={'class': 'read'})
    assert pinned.method == 'cache'
    # unpinned: the class gives the same method, which never stopped
    entry, reasons = controller.decide('t', pinned, read_figures(2), 1000,
                                       settings)
    assert (entry.cls, entry.method, entry.pinned) == \
        ('read', 'cache', False)
    assert entry.baseline_ms is None
    assert 'cache not judged' in reasons[0]
    # cold for a minute, then warm, if a little slower than pinned
    entry, reasons = run(entry, 1005, 1000 + 3600,
                         lambda now: 20 if now < 1060 else 3, settings)
    assert entry.method == 'cache' and entry.holdoff == {}
    assert not [r for r in reasons if 'deleted' in r]


def test_an_unpin_to_another_method_takes_a_baseline_without_it():
    # pinned to no method: the window before ran without cache
    pinned, _ = controller.decide('t', None, read_figures(10), 0, SETTINGS,
                                  pin={'class': 'read', 'method': 'none'})
    entry, _ = controller.decide('t', pinned, read_figures(10), 1000,
                                 SETTINGS)
    assert entry.method == 'cache'
    assert entry.baseline_ms == pytest.approx(10.0)
    assert not entry.validated


@pytest.mark.parametrize('holdoff', [600, 0])
def test_the_baseline_is_never_a_window_the_method_ran_in(holdoff):
    settings = SETTINGS._replace(holdoff=holdoff)
    entry, _ = controller.decide('t', None, read_figures(10), 0, settings)
    assert entry.method == 'cache'
    # mixed for 30 s: cache stops, but ran in the first half of the
    # window in which the tenant turns read again
    mixed, _ = controller.decide('t', entry, figures(50, 50), 30, settings)
    assert mixed.method == 'none'
    again, reasons = controller.decide('t', mixed, read_figures(2), 60,
                                       settings)
    assert again.method == 'cache' and again.baseline_ms is None
    assert again.validated and 'cache not judged' in reasons[0]
    # once a whole window (and the interval a decision takes to reach
    # every worker) ran without it, the baseline is that window's
    later = 30 + settings.window + settings.interval
    again, _ = controller.decide('t', mixed, read_figures(10), later - 1,
                                 settings)
    assert again.baseline_ms is None
    again, _ = controller.decide('t', mixed, read_figures(10), later,
                                 settings)
    assert again.baseline_ms == pytest.approx(10.0)
    assert not again.validated


def test_a_deleted_method_given_back_within_a_window_is_not_judged():
    settings = SETTINGS._replace(holdoff=0)
    entry, _ = controller.decide('t', None, read_figures(10), 0, settings)
    now = 0
    while entry.method == 'cache':
        now += 5
        entry, reasons = controller.decide('t', entry, read_figures(30),
                                           now, settings)
    assert 'deleted' in reasons[0]
    # without a hold-off, a flip of class gives cache back at once; the
    # window before it holds the deleted cache's last seconds
    mixed, _ = controller.decide('t', entry, figures(50, 50), now + 5,
                                 settings)
    again, reasons = controller.decide('t', mixed, read_figures(30),
                                       now + 10, settings)
    assert again.method == 'cache' and again.baseline_ms is None
    assert 'cache not judged' in reasons[0]


def test_validation_skips_the_cold_start_of_the_method():
    entry, _ = controller.decide('t', None, read_figures(10), 0, SETTINGS)
    # the window after the decision holds the cache's cold start (every
    # GET a miss and a fill): not judged, whatever it shows
    for now in range(5, FIRST_VERDICT, 5):
        assert controller.decide('t', entry, read_figures(30), now,
                                 SETTINGS) == (entry, []), now
    # the first window after the warm-up is judged
    judged, reasons = controller.decide('t', entry, read_figures(5),
                                        FIRST_VERDICT, SETTINGS)
    assert judged.validated and judged.method == 'cache'
    assert reasons == ['t: cache validated: 5.0 ms against 10.0 ms before']
    assert FIRST_VERDICT == \
        SETTINGS.interval + SETTINGS.warmup + SETTINGS.window


def test_the_warm_up_is_configurable():
    settings = SETTINGS._replace(warmup=300)
    entry, _ = controller.decide('t', None, read_figures(10), 0, settings)
    first = int(settings.interval + 300 + settings.window)
    entry, reasons = run(entry, 5, first, 30, settings)
    assert reasons == [] and not entry.validated
    entry, reasons = controller.decide('t', entry, read_figures(5), first,
                                       settings)
    assert entry.validated and 'validated' in reasons[0]


def test_a_verdict_is_over_the_validation_window_in_whole_windows():
    # a 20 s window (as the SAIO's), judged over 60 s: three windows
    settings = SETTINGS._replace(window=20, warmup=20, validation_window=60)
    entry, _ = controller.decide('t', None, read_figures(10), 0, settings)
    start = 5 + 20  # the warm-up: interval, then the warm-up
    # one window judged in its three: no verdict yet, whatever it shows
    entry, reasons = run(entry, 5, start + 20 + 40, 100, settings)
    assert reasons == [] and entry.method == 'cache'
    assert entry.judging['windows'] == 2
    # the third: 100, 100 and 1 ms average to 67: worse, once
    entry, reasons = controller.decide('t', entry, read_figures(1),
                                       start + 60, settings)
    assert reasons == ['t: cache worse in validation window 1 of 2: '
                       '67.0 ms against 10.0 ms before (margin 20%); '
                       'judged again']
    assert entry.method == 'cache' and not entry.validated


def test_one_bad_window_does_not_drop_a_working_method():
    entry, _ = controller.decide('t', None, read_figures(10), 0, SETTINGS)
    first = FIRST_VERDICT
    # one noisy window, well beyond the margin
    entry, reasons = controller.decide('t', entry, read_figures(50), first,
                                       SETTINGS)
    assert entry.method == 'cache' and not entry.validated
    assert reasons == ['t: cache worse in validation window 1 of 2: '
                       '50.0 ms against 10.0 ms before (margin 20%); '
                       'judged again']
    # the next window is judged afresh (no warm-up: the method ran on)
    same, reasons = controller.decide('t', entry, read_figures(5),
                                      first + 55, SETTINGS)
    assert (same, reasons) == (entry, [])
    entry, reasons = controller.decide('t', entry, read_figures(5),
                                       first + 60, SETTINGS)
    assert entry.validated and entry.method == 'cache'
    assert entry.judging is None
    assert reasons == ['t: cache validated: 5.0 ms against 10.0 ms before']


def test_two_bad_windows_in_a_row_drop_the_method():
    entry, _ = controller.decide('t', None, read_figures(10), 0, SETTINGS)
    first = FIRST_VERDICT
    entry, _ = controller.decide('t', entry, read_figures(50), first,
                                 SETTINGS)
    entry, reasons = controller.decide('t', entry, read_figures(13),
                                       first + 60, SETTINGS)
    assert (entry.method, entry.validated) == ('none', True)
    assert entry.holdoff == {'cache': first + 60 + 600}
    assert entry.judging is None
    assert reasons == ['t: deleted: cache made latency worse in 2 '
                       'validation windows in a row: 13.0 ms against '
                       '10.0 ms before (margin 20%)']


def test_the_default_margin_is_above_the_noise():
    settings = controller.DEFAULT_SETTINGS
    entry, _ = controller.decide('t', None, read_figures(10), 0, settings)
    # 10 % slower, every window for an hour: noise, not a verdict
    entry, reasons = run(entry, 5, 3600, 11, settings)
    assert entry.method == 'cache' and entry.validated
    assert reasons == ['t: cache validated: 11.0 ms against 10.0 ms before']
    assert settings.margin == 0.15
    assert settings.warmup >= settings.window
    assert settings.validation_window >= 60
    # 20 % slower, twice: deleted
    entry, _ = controller.decide('t', None, read_figures(10), 0, settings)
    entry, reasons = run(entry, 5, 3600, 12, settings)
    assert entry.method == 'none' and len(reasons) == 2
    assert 'deleted' in reasons[1] and '(margin 15%)' in reasons[1]


def test_validation_relative_to_the_others_is_over_the_judged_windows():
    settings = SETTINGS._replace(window=20, warmup=20, validation_window=40)
    entry, _ = controller.decide('t', None, figures(5, 95, put_ms=30), 0,
                                 settings, reference=lambda cls: 25.0)
    # the cluster got busier over both judged windows, the tenant no more
    refs = iter([100.0, 140.0])
    for now in (45, 65):
        entry, reasons = controller.decide(
            't', entry, figures(5, 95, put_ms=131), now, settings,
            reference=lambda cls: next(refs))
    assert entry.validated and entry.method == 'batch'
    assert reasons == ["t: batch validated: 1.09 against 1.20 times the "
                       "other tenants' latency (131.0 ms against 30.0 ms "
                       "before; theirs 120.0 ms, before 25.0 ms)"]


def test_validation_does_not_slow_classification():
    """A tenant is classified at the first tick whose window holds
    min_requests requests, and a change of class is taken at once, in
    the warm-up or while the method is judged: validation never holds
    the class back."""
    entry, _ = controller.decide('t', None, read_figures(10), 0, SETTINGS)
    assert entry.cls == 'read'
    for now in (5, 70, 130):  # warm-up, judging, judged
        at = run(entry, 5, now, 50, SETTINGS)[0] if now > 5 else entry
        changed, reasons = controller.decide('t', at, figures(5, 95), now,
                                             SETTINGS)
        assert changed.cls == 'write', now
        assert reasons[0].startswith('t: read -> write')


def test_counts_before_a_forget_are_not_the_tenants_any_more():
    counts = {'AUTH_a': {100: {'ops.GET': 5}, 105: {'ops.GET': 6},
                         110: {'ops.PUT': 7}},
              'AUTH_b': {100: {'ops.GET': 1}},
              'AUTH_c': {105: {'ops.PUT': 2}}}
    assert controller.counts_since_forget(counts, {}) is counts
    assert controller.counts_since_forget(counts, None) is counts
    # marks of tenants without counts, or before all of them: as they are
    assert controller.counts_since_forget(
        counts, {'AUTH_z': 200.0, 'AUTH_c': 105.0}) is counts
    kept = controller.counts_since_forget(
        counts, {'AUTH_a': 103.0, 'AUTH_b': 101.0, 'AUTH_c': 99.0})
    # the bucket the forget fell in goes too: some of it is from before
    assert kept == {'AUTH_a': {105: {'ops.GET': 6}, 110: {'ops.PUT': 7}},
                    'AUTH_c': {105: {'ops.PUT': 2}}}
    assert 100 in counts['AUTH_a'] and 'AUTH_b' in counts  # not changed


def test_an_entry_from_before_a_forget_is_not_the_previous_one():
    entry = controller.decide('AUTH_a', None, figures(95, 5), 1000,
                              SETTINGS)[0]
    assert controller.forgotten_entry(entry, 1000.5)
    assert not controller.forgotten_entry(entry, 1000.0)
    assert not controller.forgotten_entry(entry, None)
    assert not controller.forgotten_entry(None, 1000.5)
