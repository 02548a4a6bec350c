"""Versions and mentions: does a later memory that only mentions a state leave it first?

An agent's memory holds states ("The API rate limit is 100 requests per minute.") and, later,
what happened to the things they name ("The client exceeded the API rate limit yesterday.").
Such an event changes nothing: asked about the state, the state must come first and must not be
marked ``possibly_outdated_by`` the event. The labelled versions
(``versions_for_a_question.py``) hold distinct facts and updates but no such mention, so a rule
that reads any event told after a state as its update wins there and misfires here
(docs/decisions/0070-an-event-after-a-state.md).

Each case is a tenant of its own: the state told on 2026-05-01, the mention on 2026-06-01,
stored through ``remember``, asked with ``retrieve()`` and the defaults; then every case of
every set in one tenant, as one agent's memory holds them (each state a minute after the last,
each mention a month after its state). Reported per case and per set: whether the state came
first among the memories and was not marked outdated, and how many were marked outdated.

Usage: python benchmarks/quality/versions_mentions.py [--json PATH] [--no-save]
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the shared modules
from _common import add_output, write_result

STATE_TOLD = datetime(2026, 5, 1, tzinfo=UTC)
MENTION_TOLD = datetime(2026, 6, 1, tzinfo=UTC)
# (the state, a later memory that mentions it without changing it, a question about the state)
CASES = (
    ("The server runs Ubuntu 22.04.", "The assistant restarted the server after the outage.",
     "What OS does the server run?"),
    ("Alice's favourite editor is Vim.", "Alice opened a ticket about the editor crashing.",
     "What is Alice's favourite editor?"),
    ("The API rate limit is 100 requests per minute.",
     "The client exceeded the API rate limit yesterday.", "What is the API rate limit?"),
    ("The project uses Python 3.11.", "We fixed a bug in the project's Python code.",
     "Which Python does the project use?"),
    ("Bob is the on-call engineer this week.", "Bob fixed the login bug on Tuesday.",
     "Who is on call this week?"),
    ("The user prefers dark mode.", "The user asked how to change the theme.",
     "Does the user prefer dark mode?"),
    ("Our database is PostgreSQL 16.", "We backed up the database last night.",
     "What database do we use?"),
    ("The user lives in Lyon.", "The user visited Paris for a conference.",
     "Where does the user live?"),
    ("The staging cluster has three nodes.", "We restarted one node of the staging cluster.",
     "How many nodes does the staging cluster have?"),
    ("Maria's manager is Tom.", "Maria talked to Tom about her promotion.",
     "Who is Maria's manager?"),
    ("The office Wi-Fi password is sunflower42.", "A guest asked for the office Wi-Fi password.",
     "What is the office Wi-Fi password?"),
    ("The weekly report goes to the finance team.",
     "The finance team reviewed the weekly report on Monday.", "Who gets the weekly report?"),
)  # fmt: skip
# Written on 2026-12-07 after the cases above had been read, before any change was measured on
# them: kept apart, to measure the next change of the versions' rule on mentions it was not
# designed with. They mention dates, people, places and numbers as an agent's memory does.
HELD_OUT_CASES = (
    ("Priya's phone number is 555-0142.", "Priya called about the invoice on Thursday.",
     "What is Priya's phone number?"),
    ("The company's fiscal year ends in March.",
     "Finance closed the books for the fiscal year last week.", "When does the fiscal year end?"),
    ("Our CI runs on GitHub Actions.", "The CI pipeline failed twice on the release branch.",
     "What does our CI run on?"),
    ("The user's daughter is called Emma.", "The user took Emma to the dentist on Friday.",
     "What is the user's daughter called?"),
    ("The main database server has 64 GB of RAM.",
     "The database server ran out of disk space at 2am.",
     "How much RAM does the database server have?"),
    ("Leon's birthday is on 14 August.", "We bought Leon a bike for his birthday.",
     "When is Leon's birthday?"),
    ("The cleaning company comes every Thursday.",
     "The cleaners forgot the upstairs bathroom last time.",
     "When does the cleaning company come?"),
    ("Our landlord is Mr Okafor.", "Mr Okafor fixed the boiler last month.",
     "Who is our landlord?"),
    ("The support SLA is 4 hours for urgent tickets.",
     "Support missed the SLA on three urgent tickets in May.",
     "What is the support SLA for urgent tickets?"),
    ("The user is learning Spanish.",
     "The user practised Spanish with a tutor from Madrid yesterday.",
     "What language is the user learning?"),
    ("The kids' school starts at 8:45.", "The school sent a letter about the trip to the zoo.",
     "What time does the kids' school start?"),
    ("The marketing budget is 20,000 a quarter.",
     "Marketing spent most of the budget on the spring campaign.",
     "What is the marketing budget?"),
    ("Jonas is allergic to cats.", "Jonas sneezed all evening at Clara's flat.",
     "What is Jonas allergic to?"),
    ("The VPN server is in Frankfurt.", "The VPN dropped connections for an hour on Monday.",
     "Where is the VPN server?"),
    ("The user's gym is PureFit on Main Street.",
     "The user skipped the gym this week because of a cold.", "Which gym does the user go to?"),
    ("The release train ships every two weeks.",
     "We shipped version 4.2 on the release train yesterday.",
     "How often does the release train ship?"),
    ("Grandpa takes his blood pressure pills at breakfast.",
     "Grandpa asked the pharmacist about his blood pressure pills.",
     "When does Grandpa take his blood pressure pills?"),
    ("Our office is on the third floor.", "The lift to our office was out of order all morning.",
     "Which floor is our office on?"),
    ("The API keys rotate every 90 days.", "Ops rotated the API keys on 3 June.",
     "How often do the API keys rotate?"),
    ("Sara drives a blue Volvo.", "Sara parked the Volvo outside the school.",
     "What car does Sara drive?"),
)  # fmt: skip
# Written on 2026-12-07 after the held-out set's results were read, before the next change was
# measured on them.
HELD_OUT_2_CASES = (
    ("The team's retro is every second Friday.",
     "The retro ran long because of the outage discussion.", "When is the team's retro?"),
    ("Our payment provider is Stripe.", "Stripe sent us the monthly invoice.",
     "Who is our payment provider?"),
    ("The user's partner is called Dev.", "Dev cooked dinner for the user's parents.",
     "What is the user's partner called?"),
    ("The wiki lives in Confluence.", "Someone deleted a page from the wiki by mistake.",
     "Where does the wiki live?"),
    ("The staging database has 200 GB of storage.",
     "The nightly job filled the staging database's disk.",
     "How much storage does the staging database have?"),
    ("Anna's dog is a golden retriever.", "Anna's dog chewed through the garden hose.",
     "What kind of dog does Anna have?"),
    ("The user takes the 7:40 train to work.", "The user's train was late again this morning.",
     "Which train does the user take to work?"),
    ("Our logo uses the colour teal.",
     "The designer showed us a mock-up of the teal logo on a mug.", "What colour is our logo?"),
    ("The quarterly review is with the board.",
     "The board asked for more detail on churn at the quarterly review.",
     "Who is the quarterly review with?"),
    ("Tomás plays bass in a jazz band.",
     "Tomás's band played a gig at the harbour on Saturday.", "What does Tomás play?"),
    ("The shared drive is backed up to S3.", "The backup of the shared drive took six hours.",
     "Where is the shared drive backed up to?"),
    ("The user's accountant is Helen Marsh.", "Helen Marsh filed the user's tax return.",
     "Who is the user's accountant?"),
    ("The heating is set to 20 degrees.",
     "The heating clicked off overnight and the flat got cold.", "What is the heating set to?"),
    ("The product's free trial lasts 14 days.",
     "A customer complained that the free trial was too short.", "How long is the free trial?"),
    ("The user volunteers at the food bank on Sundays.",
     "The user sorted tins at the food bank with her sister.",
     "When does the user volunteer at the food bank?"),
    ("Our main office printer is a Brother laser.",
     "The office printer jammed during the board pack.",
     "What printer do we have in the main office?"),
    ("Kofi's favourite football team is Arsenal.", "Kofi watched the match with his cousins.",
     "Which football team does Kofi support?"),
    ("The monitoring alerts go to the on-call channel.",
     "The on-call channel got flooded with disk alerts overnight.",
     "Where do the monitoring alerts go?"),
    ("The user's flat has two bedrooms.", "The user painted the small bedroom green.",
     "How many bedrooms does the user's flat have?"),
    ("The login service uses JWT tokens.",
     "We debugged an expired token error in the login service.",
     "What does the login service use?"),
)  # fmt: skip
# Written on 2026-12-07 after the second held-out set's results were read, before the next change
# was measured on them: events an agent notes with when they happened.
HELD_OUT_3_CASES = (
    ("The team's error tracker is Sentry.", "Sentry flagged a spike of 500 errors two days ago.",
     "What error tracker does the team use?"),
    ("Lukas is the product owner for checkout.",
     "Lukas demoed the new checkout flow to sales last week.",
     "Who is the product owner for checkout?"),
    ("The user's dentist is Dr Patel.", "The user saw Dr Patel for a filling last month.",
     "Who is the user's dentist?"),
    ("Our Kubernetes cluster runs on GKE.",
     "The cluster autoscaler added four nodes during the sale last weekend.",
     "Where does our Kubernetes cluster run?"),
    ("The office alarm code is 4821.", "The cleaner set off the office alarm last night.",
     "What is the office alarm code?"),
    ("Rosa's daughter plays the violin.",
     "Rosa's daughter performed at the school concert last week.",
     "What instrument does Rosa's daughter play?"),
    ("The shared inbox is support@acme.io.",
     "Someone archived half the shared inbox by accident three days ago.",
     "What is the shared inbox?"),
    ("Our accountant files the VAT return every quarter.",
     "The accountant filed the VAT return a week ago.", "How often is the VAT return filed?"),
    ("The user's car insurance is with Aviva.",
     "The user phoned the car insurance about a scratch last month.",
     "Who is the user's car insurance with?"),
    ("The nightly export runs at 1am.", "The nightly export failed yesterday with a timeout.",
     "When does the nightly export run?"),
    ("Chen is our main contact at the bank.", "Chen emailed us the loan papers this morning.",
     "Who is our main contact at the bank?"),
    ("The user's running club meets on Wednesday evenings.",
     "The user ran ten kilometres with the running club last Wednesday.",
     "When does the user's running club meet?"),
    ("The design system is built in Figma.",
     "The designers reorganised the design system's components last week.",
     "What is the design system built in?"),
    ("Uncle Pete lives in Cork.", "Uncle Pete came over for Sunday lunch two weeks ago.",
     "Where does Uncle Pete live?"),
    ("The load balancer is an AWS ALB.",
     "The load balancer returned 502s for ten minutes during the deploy last week.",
     "What is our load balancer?"),
    ("The user is vegetarian.", "The user cooked a mushroom risotto for friends last weekend.",
     "Is the user vegetarian?"),
    ("Our trademark lawyer is at Baker & Lowe.",
     "The trademark lawyer sent the renewal forms a few days ago.",
     "Where is our trademark lawyer?"),
    ("The staging environment resets every Sunday.",
     "QA lost their test data when staging reset last Sunday.",
     "How often does the staging environment reset?"),
    ("Mia's favourite restaurant is Luigi's.", "Mia took her parents to Luigi's last month.",
     "What is Mia's favourite restaurant?"),
    ("The SSO provider is Okta.", "Okta locked out three users after failed logins yesterday.",
     "What is the SSO provider?"),
)  # fmt: skip
# Written on 2026-12-07 after the third held-out set's results were read, before the next change
# was measured on them: events that count things, as an agent notes them.
HELD_OUT_4_CASES = (
    ("The support team uses Zendesk.", "Zendesk was down for 20 minutes this morning.",
     "What does the support team use?"),
    ("Our website runs on WordPress.",
     "The website got 3,000 visitors after the newsletter went out.",
     "What does our website run on?"),
    ("The user's cat is called Miso.", "The user took Miso to the vet for 2 vaccinations.",
     "What is the user's cat called?"),
    ("The build server is a Mac mini.", "The build server ran 140 builds yesterday.",
     "What is the build server?"),
    ("The user's manager is Grace.", "Grace gave the user feedback on the Q3 report.",
     "Who is the user's manager?"),
    ("The team's standup is at 9:15.", "Standup ran 25 minutes over today.",
     "When is the team's standup?"),
    ("The office coffee machine is a Jura.",
     "The coffee machine needed descaling after 500 cups.",
     "What coffee machine does the office have?"),
    ("The user's sister lives in Oslo.", "The user's sister sent photos from her hike.",
     "Where does the user's sister live?"),
    ("Our main database is MySQL.",
     "The main database handled 2 million queries during the launch.",
     "What is our main database?"),
    ("The user prefers aisle seats.", "The user booked seat 14C on the flight to Rome.",
     "What seats does the user prefer?"),
    ("The user's phone is a Pixel 8.", "The user dropped the phone and cracked the screen.",
     "What phone does the user have?"),
    ("The code review rule is two approvals.",
     "The release PR got approved by three reviewers.",
     "How many approvals does a code review need?"),
    ("The user's yoga class is on Tuesdays.", "The user missed yoga class twice this month.",
     "When is the user's yoga class?"),
    ("Our cloud bill is paid by the finance team.",
     "The cloud bill came to 8,400 dollars in October.", "Who pays our cloud bill?"),
    ("The user's commute is by bike.",
     "The user cycled 30 kilometres to work and back in the rain.", "How does the user commute?"),
    ("The team's Slack channel for incidents is #ops-alerts.",
     "Someone posted 40 messages in #ops-alerts during the outage.",
     "What is the incidents channel?"),
    ("The user's grandmother is 92.", "The user visited her grandmother at the care home.",
     "How old is the user's grandmother?"),
    ("The analytics tool is Mixpanel.", "Mixpanel tracked 15 new signups from the campaign.",
     "What analytics tool do we use?"),
    ("The user's favourite band is Radiohead.",
     "The user listened to Radiohead for 3 hours on the train.",
     "What is the user's favourite band?"),
    ("Our office plants are watered by Jamie.", "Jamie watered all 18 plants before the holiday.",
     "Who waters the office plants?"),
)  # fmt: skip
# Written on 2026-12-07 after the fourth held-out set's results were read, before the next
# change was measured on them: what people did, told in the verbs they use.
HELD_OUT_5_CASES = (
    ("The user's doctor is Dr Novak.", "The user saw Dr Novak about her knee.",
     "Who is the user's doctor?"),
    ("The team's lunch spot is the Thai place on Elm Street.",
     "The team ate at the Thai place to celebrate the release.",
     "Where does the team have lunch?"),
    ("Our biggest customer is Northwind.", "Northwind's CTO spoke at our user conference.",
     "Who is our biggest customer?"),
    ("The user's best friend is Ama.", "Ama slept over at the user's place after the party.",
     "Who is the user's best friend?"),
    ("The deploy window is Thursday afternoon.",
     "The team froze the deploy window for the holidays.", "When is the deploy window?"),
    ("The user's coffee order is a flat white.",
     "The user drank a flat white while waiting for the train.",
     "What is the user's coffee order?"),
    ("The office manager is Dana.", "Dana lent the user a charger this morning.",
     "Who is the office manager?"),
    ("Our on-call rotation is weekly.", "The on-call engineer slept through one page at night.",
     "How often does the on-call rotation change?"),
    ("The user's piano teacher is Mrs Ito.", "Mrs Ito taught the user a new scale.",
     "Who is the user's piano teacher?"),
    ("The product roadmap lives in Notion.",
     "The product manager wrote up the roadmap review in Notion.",
     "Where does the product roadmap live?"),
    ("The user's neighbour is called Farid.", "Farid swept the leaves off the shared path.",
     "What is the user's neighbour called?"),
    ("The company's auditor is Grant & Lowe.",
     "The auditor sought more detail on the travel expenses.",
     "Who is the company's auditor?"),
    ("The user's favourite park is Victoria Park.",
     "The user read a novel on a bench in Victoria Park.", "What is the user's favourite park?"),
    ("Our team lead is Sanjay.", "Sanjay thought the sprint went well.",
     "Who is our team lead?"),
    ("The user goes swimming on Saturday mornings.",
     "The user swam forty lengths at the leisure centre.",
     "When does the user go swimming?"),
    ("The sales deck is in Google Slides.",
     "The sales team hid the pricing slide before the demo.", "Where is the sales deck?"),
    ("The user's son plays football for the Rovers.",
     "The user's son scored the winning goal for the Rovers.",
     "Which team does the user's son play for?"),
    ("Our password manager is 1Password.",
     "The security team felt the password manager audit went smoothly.",
     "What password manager do we use?"),
    ("The user's book club meets monthly.",
     "The book club chose a thriller for the next meeting.",
     "How often does the user's book club meet?"),
    ("The caretaker of the building is Mr Reyes.",
     "Mr Reyes fixed the broken light in the stairwell.",
     "Who is the caretaker of the building?"),
)  # fmt: skip
# Written on 2026-12-07 after every set above had been read, before any change was measured on
# them: events told in the first person as a user's memory holds them ("I", "we"), with "had",
# in the present perfect, with a word of change said in passing ("replaced the kitchen tap") or a
# name or number of their own that is no new value of the state.
HELD_OUT_6_CASES = (
    ("We have a tortoise called Tofu.", "Tofu had a vet check-up last week; all fine.",
     "What pets do we have?"),
    ("I'm allergic to penicillin.", "I had a bad reaction to a bee sting on Sunday.",
     "What am I allergic to?"),
    ("Our boiler is a Worcester Bosch combi.", "We had the boiler serviced in March.",
     "What boiler do we have?"),
    ("My climbing group meets on Thursday evenings.",
     "I've missed the climbing group twice this month.",
     "When does my climbing group meet?"),
    ("Our recipe collection is in Paprika.",
     "Someone has deleted a recipe from our Paprika collection.",
     "Where is our recipe collection?"),
    ("Our letting agent is Foxtons.", "Foxtons has replaced the kitchen tap.",
     "Who is our letting agent?"),
    ("My commute is 25 minutes by tram.", "The tram broke down on my way in this morning.",
     "How long is my commute?"),
    ("Our physiotherapy clinic is Motus.", "I took Maya to Motus about her ankle.",
     "Which physiotherapy clinic do we use?"),
    ("The team's standup bot is Geekbot.",
     "Geekbot forgot to post the standup questions on Monday.",
     "Which standup bot does the team use?"),
    ("Our booking system is SimplyBook.", "The booking system had 4,000 bookings during the sale.",
     "Which booking system do we use?"),
    ("My partner works night shifts at the hospital.", "My partner had a long shift on Saturday.",
     "Where does my partner work?"),
    ("Our joint account is with Monzo.", "We paid the builder from the joint account.",
     "Where is our joint account?"),
    ("The scanner in the study is an Epson.", "I scanned the boarding passes on the Epson.",
     "What scanner is in the study?"),
    ("Our Slack workspace is acme-team.", "A new intern joined the acme-team Slack on Tuesday.",
     "What is our Slack workspace called?"),
    ("My mother-in-law is called Ingrid.", "Ingrid has sent us a parcel of Swedish sweets.",
     "What is my mother-in-law called?"),
    ("The backup job runs at 2am.", "The backup job failed twice this week.",
     "When does the backup job run?"),
    ("I play five-a-side football on Wednesdays.", "I scored two goals at five-a-side.",
     "When do I play five-a-side?"),
    ("Our tax adviser is Hale & Co.", "Hale & Co have filed our tax return.",
     "Who is our tax adviser?"),
    ("My car is a blue Skoda Octavia.", "I've had the Skoda's tyres changed.",
     "What car do I have?"),
    ("The kids' nursery is Little Acorns.", "We went to the Little Acorns summer fair on Saturday.",
     "Which nursery do the kids go to?"),
)  # fmt: skip
SETS = {
    "read": CASES,
    "held-out": HELD_OUT_CASES,
    "held-out-2": HELD_OUT_2_CASES,
    "held-out-3": HELD_OUT_3_CASES,
    "held-out-4": HELD_OUT_4_CASES,
    "held-out-5": HELD_OUT_5_CASES,
    "held-out-6": HELD_OUT_6_CASES,
}


ONE_TENANT = "mention-one-tenant"


def evaluate(store: Any, retriever: Any) -> dict[str, Any]:
    """Each set's cases, each in a tenant of its own; then every case of every set in one tenant
    (``"<set>, one tenant"``): whether the state comes first, not marked outdated."""
    results = {
        name: _evaluate(retriever, cases, [_told(store, f"mention-{name}-{n}", case)
                                           for n, case in enumerate(cases)])
        for name, cases in SETS.items()
    }  # fmt: skip
    store.forget(tenant_id=ONE_TENANT, everything=True)
    everything = [case for cases in SETS.values() for case in cases]
    ids = iter(_told(store, ONE_TENANT, case, minute) for minute, case in enumerate(everything))
    for name, cases in SETS.items():
        results[f"{name}, one tenant"] = _evaluate(retriever, cases, [next(ids) for _ in cases])
    return results


def _told(store: Any, tenant: str, case: tuple[str, str, str], minute: int = 0) -> tuple[str, str]:
    # The state told first, the mention a month later; the tenant and the state's id.
    state, mention, _ = case
    if tenant != ONE_TENANT:
        store.forget(tenant_id=tenant, everything=True)
    after = timedelta(minutes=minute)
    state_id = store.remember(state, tenant_id=tenant, created_at=STATE_TOLD + after)
    store.remember(mention, tenant_id=tenant, created_at=MENTION_TOLD + after)
    return tenant, state_id


def _evaluate(
    retriever: Any, told: tuple[tuple[str, str, str], ...], stored: list[tuple[str, str]]
) -> dict[str, Any]:
    cases: list[dict[str, Any]] = []
    for (_, _, question), (tenant, state_id) in zip(told, stored, strict=True):
        memories = [
            r for r in retriever.retrieve(question, tenant_id=tenant).results
            if r.source == "semantic"
        ]  # fmt: skip
        first = bool(memories) and memories[0].metadata["id"] == state_id
        outdated = any(
            r.metadata["id"] == state_id and "possibly_outdated_by" in r.metadata for r in memories
        )
        cases.append(
            {"question": question, "state_first": first, "marked_outdated": outdated,
             "first": memories[0].content if memories else None}
        )  # fmt: skip
    kept = sum(c["state_first"] and not c["marked_outdated"] for c in cases)
    outdated = sum(c["marked_outdated"] for c in cases)
    return {"cases": len(cases), "state_kept": kept, "share": round(kept / len(cases), 3),
            "marked_outdated": outdated, "per_case": cases}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_output(parser)
    args = parser.parse_args()

    from _server import embedded

    from retrieval.db.migrate import MigrationSettings
    from retrieval.memory.store import MemoryStore
    from retrieval.search.config import RetrievalConfig
    from retrieval.search.retriever import HybridRetriever

    bench = embedded(None, MigrationSettings(schema="mentions", embedding_dim=384))
    store = MemoryStore(bench.engine, schema="mentions")
    with HybridRetriever.from_store(store, config=RetrievalConfig(record_access=False)) as r:
        results = evaluate(store, r)
    for name, result in results.items():
        for case in result["per_case"]:
            kept = case["state_first"] and not case["marked_outdated"]
            said = "kept    " if kept else "DEMOTED "
            print(said + case["question"], "| first:", case["first"])
        print(f"{name}: the state kept first for {result['state_kept']} of {result['cases']}"
              f" (marked outdated: {result['marked_outdated']})")  # fmt: skip
    write_result("versions-mentions", results, args)


if __name__ == "__main__":
    main()
