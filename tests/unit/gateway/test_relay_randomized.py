"""1,000 randomized sequences of 4 clients at once against a misbehaving upstream, through the
real gateway: 0 answers reach a client that did not ask for them. Each upstream answer echoes
the request's id; between sequences the upstream may also write a stray response on every
idle connection. h11 reads each answer (wire_client.py). A hang is an answer not read within
30 s: this 2-core machine, shared, has stalled a whole process for several seconds.

The upstream lives throughout, so no behaviour it answers (the own-id ones) may get the
gateway's 503 "not reachable": a connect that a stalled host timed out (seen once in 4,000 in
a whole-suite run, before the gateway retried such connects) is tried once more, and every
answer of an own-id behaviour must carry its own id. ("drop", an upstream that closes without
answering, is that 503 by design.)"""

from __future__ import annotations

import asyncio
import random
import time

from fake_hostile_upstream import FakeHostileUpstream
from gateway_harness import discovered, running_gateway
from wire_client import exchange

SEQUENCES = 1000
CLIENTS = 4
# Behaviours whose answer must carry the client's own id; the others must carry none.
OWN = ("cl", "sse", "continue", "drip", "drip_sse", "close", "eof_body", "stray_after",
       "die_chunk")
NONE = ("te_cl", "dup_cl", "drop", "die_json", "s204")


async def test_no_answer_reaches_the_wrong_client_in_1000_random_sequences() -> None:
    rng = random.Random(19)
    upstream = await FakeHostileUpstream().start()
    wrong, lost, unframed, hung, refused, answers = [], [], [], [], [], 0
    started = time.monotonic()
    try:
        async with running_gateway(upstream.url) as gw:
            await discovered(gw, 1)
            for seq in range(SEQUENCES):
                plan = {}
                for client in range(CLIENTS):
                    rid = f"s{seq}c{client}"
                    plan[rid] = rng.choice(OWN + NONE + ("head",))
                upstream.plan.update(plan)
                results = await asyncio.gather(*(
                    exchange(gw.url, rid, method="HEAD" if how == "head" else "POST",
                             stream=how in ("sse", "drip_sse", "die_chunk"), timeout_s=30)
                    for rid, how in plan.items()), return_exceptions=True)
                for (rid, how), answer in zip(plan.items(), results, strict=True):
                    answers += 1
                    if isinstance(answer, TimeoutError):
                        hung.append((seq, rid, how))
                        continue
                    assert not isinstance(answer, BaseException), answer
                    if answer.ids() - {rid}:
                        wrong.append((seq, rid, how, answer.ids()))
                    if how in OWN and answer.ids() != {rid}:
                        if answer.status == 503 and b"is not reachable" in answer.body:
                            refused.append((seq, rid, how))  # told apart for the message
                        else:
                            lost.append((seq, rid, how, answer))
                    if answer.broken or answer.partial_chunk:
                        unframed.append((seq, rid, how, answer))
                if rng.random() < 0.3:
                    upstream.inject_idle()
            busy = len(gw.replica.pool.busy)
    finally:
        await upstream.stop()
    elapsed = time.monotonic() - started
    print(f"{SEQUENCES} sequences, {answers} answers in {elapsed:.1f} s: {len(wrong)} to the "
          f"wrong client, {len(lost)} without their own id, {len(unframed)} badly framed, "
          f"{len(hung)} hung, {len(refused)} refused as not reachable")
    assert answers == SEQUENCES * CLIENTS
    assert wrong == [], wrong[:5]
    assert lost == [], lost[:5]
    assert refused == [], refused[:5]
    assert unframed == [], unframed[:5]
    assert hung == [], hung[:5]
    assert busy == 0
