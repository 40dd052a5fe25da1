"""Many App installations per engine (issue 30, D110): repository -> installation, one
token, bucket and pacer per installation, one poll lane each, and a repository outside
every installation refused with a reason and a paging health cause."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine as SAEngine

from engine.errors import ConfigError, LiError
from engine.github import RequestPacer
from engine.github.appconfig import app_config_from
from engine.github.installations import InstallationRouter
from engine.health.assess import HealthState
from engine.health.status import schedule_health
from engine.poll.config import validate_poll_config
from engine.run.daemon import Engine
from engine.schedules.spec import ScheduleSpec
from engine.store.models import TriggerType
from engine.store.pollstore import PollStore
from engine.store.store import Store
from ghsim import GitHubSim
from tests.appkit import key_pair
from tests.factories import FakeClock, settings_for


@dataclass
class World:
    sim: GitHubSim
    clock: FakeClock
    store: Store
    db_url: str
    app_id: int
    alpha: int  # installation on the account alpha
    beta: int  # installation on the account beta
    key_file: Path
    cache: Path

    def env(self, installations: str = "discover") -> dict[str, str]:
        return {
            "GITHUB_API_URL": self.sim.url,
            "GITHUB_APP_ID": str(self.app_id),
            "GITHUB_APP_PRIVATE_KEY_FILE": str(self.key_file),
            "GITHUB_APP_INSTALLATIONS": installations,
            "GITHUB_APP_TOKEN_CACHE": str(self.cache),
        }

    def settings(self, installations: str = "discover", **overrides: object) -> object:
        app = app_config_from(self.env(installations))
        return settings_for(self.db_url, github_api_url=self.sim.url, github_app=app, **overrides)

    def router(
        self, installations: str = "discover", pacer: Callable[[str], RequestPacer] | None = None
    ) -> InstallationRouter:
        settings = self.settings(installations)
        assert settings.github_app is not None  # type: ignore[attr-defined]
        return InstallationRouter(
            settings.github_app,  # type: ignore[attr-defined]
            settings,  # type: ignore[arg-type]
            pacer=pacer or (lambda identity: RequestPacer(6000, clock=self.clock)),
            clock=self.clock,
            record_rates=False,
        )

    def add(self, repo: str) -> int:
        trigger = validate_poll_config({"repo": repo, "poll_interval_seconds": 60})
        spec = ScheduleSpec(
            name=f"watch-{repo.replace('/', '-')}",
            trigger_type=TriggerType.GITHUB_POLL,
            trigger_config=trigger.model_dump(mode="json"),
            command="true",
        )
        return self.store.add_schedule(spec).id


@pytest.fixture
def world(db: SAEngine, db_url: str, tmp_path: Path) -> Iterator[World]:
    clock = FakeClock()
    with GitHubSim(tmp_path / "sim", clock=clock) as sim:
        for repo in ("alpha/one", "alpha/two", "beta/one", "beta/two", "gamma/outside"):
            sim.create_repo(repo)
        keys = key_pair()
        app = sim.create_app("kdev-review", keys.public)
        alpha = sim.install_app(app.id, "alpha").id
        beta = sim.install_app(app.id, "beta").id
        key_file = tmp_path / "app.pem"
        key_file.write_text(keys.private, encoding="ascii")
        key_file.chmod(0o600)
        yield World(
            sim, clock, Store(db, clock), db_url, app.id, alpha, beta, key_file, tmp_path / "tok"
        )


def discovered(sim: GitHubSim) -> int:
    return len(sim.requests_to(r"^/repos/[^/]+/[^/]+/installation$", "GET"))


def test_the_installations_variable_is_routes_or_discover() -> None:
    base = {"GITHUB_APP_ID": "7", "GITHUB_APP_PRIVATE_KEY_FILE": "/k.pem"}
    routed = app_config_from({**base, "GITHUB_APP_INSTALLATIONS": "Alpha=11, beta/one=12"})
    assert routed is not None and routed.many
    assert routed.routed("alpha/anything") == 11 and routed.routed("BETA/one") == 12
    assert routed.routed("beta/two") is None  # neither its own entry nor its owner's
    assert routed.for_installation(11).cache_path.name == "7-11.json"
    discover = app_config_from({**base, "GITHUB_APP_INSTALLATIONS": "discover"})
    assert discover is not None and discover.routes == ()


@pytest.mark.parametrize(
    "extra",
    [
        {"GITHUB_APP_INSTALLATIONS": "alpha=x"},
        {"GITHUB_APP_INSTALLATIONS": "al pha=1"},
        {"GITHUB_APP_INSTALLATIONS": "alpha=1,ALPHA=2"},
        {"GITHUB_APP_INSTALLATIONS": "discover", "GITHUB_APP_INSTALLATION_ID": "3"},
    ],
)
def test_a_bad_installations_variable_is_one_line_invalid_app_config(
    extra: dict[str, str],
) -> None:
    base = {"GITHUB_APP_ID": "7", "GITHUB_APP_PRIVATE_KEY_FILE": "/k.pem"}
    with pytest.raises(ConfigError) as caught:
        app_config_from({**base, **extra})
    assert caught.value.reason == "invalid_app_config" and "\n" not in caught.value.message


def test_each_repository_maps_to_its_installation_with_its_own_token_and_pacer(
    world: World,
) -> None:
    router = world.router()
    try:
        one, two, other = (router.route(r) for r in ("alpha/one", "alpha/two", "beta/one"))
        assert (one.installation_id, other.installation_id) == (world.alpha, world.beta)
        assert two.client is one.client  # one client, token and pacer per installation
        assert other.client.pacer is not one.client.pacer
        assert one.client.token_identity != other.client.token_identity
        assert discovered(world.sim) == 3  # each repository asked once, then kept
        router.route("alpha/one")
        assert discovered(world.sim) == 3
        one.client.list_pulls("alpha/one")
        other.client.list_pulls("beta/one")
        files = sorted(p.name for p in world.cache.iterdir() if p.suffix == ".json")
        assert files == sorted(f"{world.app_id}-{i}.json" for i in (world.alpha, world.beta))
        tokens = [c.client._source.token() for c in (one, other)]  # type: ignore[union-attr]
        buckets = [world.sim.bucket(t) for t in tokens]
        assert buckets[0] is not buckets[1] and buckets[0].used == buckets[1].used == 1
    finally:
        router.close()


def test_a_configured_route_needs_no_discovery(world: World) -> None:
    router = world.router(f"alpha={world.alpha},beta/one={world.beta}")
    try:
        assert router.route("alpha/two").installation_id == world.alpha
        assert router.route("beta/one").installation_id == world.beta
        assert discovered(world.sim) == 0
        assert router.route("beta/two").installation_id == world.beta  # asked of GitHub
        assert discovered(world.sim) == 1
    finally:
        router.close()


def test_a_repository_outside_every_installation_is_one_line_and_pages(world: World) -> None:
    router = world.router()
    schedule = world.add("gamma/outside")
    engine = Engine(world.settings(), world.store, clock=world.clock, router=router)  # type: ignore[arg-type]
    engine.start()
    try:
        with pytest.raises(LiError) as caught:
            router.route("gamma/outside")
        assert caught.value.reason == "app_not_installed"
        assert "\n" not in caught.value.message and "gamma/outside" in caught.value.message
        assert "outside every installation" in caught.value.message
        asked = discovered(world.sim)
        world.clock.advance(61)
        assert engine.poll(schedule) is None
        assert discovered(world.sim) == asked  # the refusal is kept, not asked again
    finally:
        engine.close()
    [health] = schedule_health(world.store, "watch-gamma-outside")
    assert health.facts.last_error_reason == "app_not_installed"
    assert health.health.state is HealthState.BLIND
    assert [c.code for c in health.health.causes][0] == "app_not_installed"


class HeldSleep:
    """A pacer's sleep that holds its caller until released, counting its calls."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        assert self.gate.wait(30), "never released"


def test_one_installations_spent_bucket_never_delays_anothers_polls(world: World) -> None:
    held = HeldSleep()
    identities: dict[str, RequestPacer] = {}

    def pacer(identity: str) -> RequestPacer:
        sleep = held if identity.endswith(f":{world.alpha}") else (lambda seconds: None)
        identities[identity] = RequestPacer(6000, clock=world.clock, max_wait=30, sleep=sleep)
        return identities[identity]

    router = world.router(pacer=pacer)
    # alpha's bucket nearly spent in ghsim: 10 of 5,000 left for the next 100 s, so its
    # pacer spreads alpha's requests 10 s apart (held here) after the first answer.
    alpha_token = router.route("alpha/one").client._source.token()  # type: ignore[union-attr]
    reset = world.clock().timestamp() + 100
    world.sim.set_rate_limit(alpha_token, remaining=10, reset_at=int(reset))
    alpha = [world.add("alpha/one"), world.add("alpha/two")]
    beta = [world.add("beta/one"), world.add("beta/two")]
    settings = world.settings(poll_threads_setting=1)
    engine = Engine(settings, world.store, clock=world.clock, router=router)  # type: ignore[arg-type]
    engine.start()
    polls = PollStore(world.store)
    try:
        world.clock.advance(61)
        due = world.clock()
        for schedule in alpha + beta:  # alpha's first: a shared queue would put beta behind
            engine.fire(schedule, trigger_type=TriggerType.GITHUB_POLL)
        deadline = time.monotonic() + 20
        while not all(polls.get_state(s).last_poll_at for s in beta):
            assert time.monotonic() < deadline, "beta's polls waited for alpha's bucket"
            time.sleep(0.05)
        assert held.calls and not held.gate.is_set()  # alpha is still held by its pacer
        assert all(polls.get_state(s).last_poll_at == due for s in beta)  # on the test clock
        assert polls.get_state(alpha[1]).last_poll_at is None  # alpha's second still waits
        held.gate.set()
        while not all(polls.get_state(s).last_poll_at for s in alpha):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        held.gate.set()
        engine.close()
    assert sorted(engine._lanes.lanes()) == sorted([world.alpha, world.beta])


def test_a_fired_command_gets_its_events_one_installation(world: World) -> None:
    from engine.github import github_client
    from engine.poll.handover import github_environment

    routed = world.settings(f"alpha={world.alpha}")
    handed = github_environment(routed, {}, "alpha/one")  # type: ignore[arg-type]
    assert handed["GITHUB_APP_INSTALLATION_ID"] == str(world.alpha)
    assert handed["GITHUB_APP_TOKEN_CACHE"] == str(
        world.cache / f"{world.app_id}-{world.alpha}.json"
    )
    assert "GITHUB_APP_INSTALLATIONS" not in handed
    found = github_environment(routed, {}, "beta/one")  # type: ignore[arg-type]
    assert found["GITHUB_APP_REPOSITORY"] == "beta/one"
    assert "GITHUB_APP_INSTALLATION_ID" not in found
    with pytest.raises(ConfigError) as caught:
        github_client(routed)  # type: ignore[arg-type]
    assert caught.value.reason == "invalid_app_config"
