"""A small synthetic news corpus, written for neardup, for demos and first runs.

Everything here is invented: the town of Port Alder, its people, firms and newspapers.  The
twelve stories (:func:`sample_stories`) were written for this module; :func:`sample_corpus`
adds the kinds of copies real news is full of, made from them by fixed rules, so that
``neardup demo``, ``neardup serve --preload`` and the web page show duplicates, copied
passages and a breaking event on a machine with nothing but neardup:

* a breaking story (the river flood) picked up by seventeen outlets within two and a half
  hours, each a wire reprint with its own dateline and a one-line update: duplicates of the
  first report, and a breaking event (more than 15 similar articles within 4 hours);
* a correction (one figure changed a day later) and a shortened reprint (the first two
  paragraphs): duplicates or similar stories, depending on what changed;
* a follow-up on the flood a day later that repeats two paragraphs of the first report and
  adds its own: a similar story;
* a weekend round-up stitched from a paragraph of two earlier stories and one of its own:
  the origin view marks the two copied passages and links them to their sources.

Every article carries ``"synthetic": true``.  Deterministic: the same list every call.

:func:`data_folders` says where the real data (the shared folder with Reuters-21578 and the
other corpora) is looked for, the same for every command and the service.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from neardup.records import Article

__all__ = ["SAMPLE_SOURCE", "data_folders", "sample_corpus", "sample_stories"]

#: The ``source`` of the twelve original stories.
SAMPLE_SOURCE = "Port Alder Gazette"

_START = dt.datetime(2024, 3, 1, 7, 0, tzinfo=dt.UTC)

# (id, title, hours after _START, paragraphs).  Written for neardup; any likeness to real
# places, people or firms is chance.
_STORIES: list[tuple[str, str, float, list[str]]] = [
    (
        "flood",
        "River Alder bursts its banks, flooding the harbour district",
        72.0,
        [
            "The River Alder burst its banks before dawn on Monday after three days of heavy"
            " rain, flooding streets in the harbour district of Port Alder and forcing about"
            " 600 residents from their homes. Water stood more than a metre deep on Quay Road"
            " by six o'clock, the fire service said.",
            "Mayor Ingrid Saltmarsh said emergency shelters had opened at the Northgate sports"
            " hall and at two schools. Buses were taking families from the worst-hit streets,"
            " and volunteers handed out blankets and hot drinks at the shelters.",
            "The regional water authority said the river peaked at 4.8 metres at the Mill"
            " Lane gauge, the highest level since records began in 1961. Engineers were"
            " checking the old flood wall near the fish market, where water had seeped"
            " through in several places overnight.",
            "Power was cut to about 2,300 homes as a precaution, the grid operator said."
            " Schools in the district will stay closed until Wednesday, and the harbour"
            " ferry has stopped running.",
            "Forecasters expect the rain to ease by the evening, but warned that the river"
            " could rise again on Tuesday as water from the hills reaches the town.",
        ],
    ),
    (
        "tram",
        "City council approves tram line to the airport",
        2.0,
        [
            "Port Alder city council voted 31 to 12 on Friday to build a tram line from the"
            " central station to the airport, ending a decade of argument over how to link"
            " the two. The line will have 12 stops and should open in 2029.",
            "The project is expected to cost 410 million crowns, two thirds of it paid by"
            " the national transport fund. Councillor Oskar Brenn, who chairs the transport"
            " committee, called the vote a turning point for a town that has outgrown its"
            " buses.",
            "Opponents said the money would be better spent on cycle lanes and on repairing"
            " the roads in the older districts. Shopkeepers on Market Street, where the"
            " tracks will run, asked for help during two years of building work.",
            "Construction is due to start next spring with the depot at Fenwick Yard. The"
            " council will publish the timetable for road closures in the summer.",
        ],
    ),
    (
        "fish",
        "Alder Fisheries lands a record cod catch",
        5.5,
        [
            "Alder Fisheries said on Friday that its boats landed 18,400 tonnes of cod last"
            " year, the largest catch in the cooperative's ninety-year history. Revenue rose"
            " by a fifth to 96 million crowns.",
            "Chief executive Marta Quill credited colder water in the northern grounds and a"
            " new quota agreement signed two years ago. She said the cooperative would hire"
            " 40 more people at its processing plant on Dock Street.",
            "Marine scientists at the university were more cautious. Dr Lena Voss said the"
            " stock was healthy but that one good year did not make a trend, and that"
            " warmer summers could push the fish further north again.",
            "The cooperative plans to spend part of its profit on two new trawlers with"
            " cleaner engines, due for delivery next year.",
        ],
    ),
    (
        "bakery",
        "Crumb and Company opens its tenth bakery",
        9.0,
        [
            "Crumb and Company, the bakery chain started by two sisters in a garage on Elm"
            " Street, opened its tenth shop on Saturday with a queue around the block. The"
            " new shop on Harbour Square sells bread baked overnight in the firm's own"
            " ovens.",
            "Co-founder Hanna Crumb said the chain still uses her grandmother's recipe for"
            " rye bread and buys all its flour from mills within a hundred kilometres. The"
            " firm now employs 85 people.",
            "Sales grew by 30 percent last year, helped by a café corner in each shop. The"
            " sisters said they had turned down two offers to buy the business and wanted"
            " to stay independent.",
        ],
    ),
    (
        "tidal",
        "University wins grant for tidal energy research",
        26.0,
        [
            "The University of Port Alder has won a grant of 22 million crowns to study"
            " whether the strong tides in the Alder estuary could power the town. The"
            " four-year project starts in September.",
            "Professor Ruth Okafor, who will lead the work, said a small test turbine would"
            " be anchored off Gull Point next year. Sensors will record how fish and seals"
            " react to the blades.",
            "If the tests go well, a row of turbines could supply a fifth of the town's"
            " electricity by the middle of the next decade, she said. The harbour board has"
            " agreed to keep a shipping lane clear of the test site.",
            "Environmental groups welcomed the research but asked for the results on wildlife"
            " to be published in full.",
        ],
    ),
    (
        "bridge",
        "Harbour Bridge to close for two weekends of repairs",
        30.0,
        [
            "The Harbour Bridge will close to all traffic on the next two weekends while"
            " engineers replace worn joints and resurface the deck, the city roads"
            " department said on Saturday. The bridge carries about 40,000 vehicles a day.",
            "Drivers will be sent along the ring road, which could add twenty minutes to"
            " journeys between the old town and the northern suburbs. Pedestrians and"
            " cyclists can still cross on the east footway.",
            "Extra buses will run on route 5 and the harbour ferry will sail every quarter"
            " of an hour instead of every half hour. The work is part of a repair programme"
            " that will cost 14 million crowns over three years.",
        ],
    ),
    (
        "football",
        "Port Alder Rovers reach the cup semi-final",
        50.0,
        [
            "Port Alder Rovers beat Westerby United 2-1 on Sunday to reach the semi-final of"
            " the national cup for the first time since 1988. Striker Tomas Reed scored both"
            " goals, the second a header in the last minute.",
            "About 9,000 fans filled the Riverside Ground, its biggest crowd this season."
            " Manager Elsa Brandt said her young side had shown great spirit after falling"
            " behind early in the first half.",
            "The draw for the semi-finals will be made on Tuesday evening. The club said"
            " season-ticket holders would get the first chance to buy tickets.",
        ],
    ),
    (
        "ward",
        "Hospital opens a new children's ward",
        53.0,
        [
            "Port Alder General Hospital opened a new children's ward on Sunday with 24 beds,"
            " a playroom and rooms where parents can stay overnight. The ward replaces one"
            " built in the 1970s.",
            "Head nurse Amira Lund said the old ward was cramped and had no space for"
            " families. The new building was paid for partly by a public appeal that raised"
            " 3.5 million crowns in a year.",
            "Children drew the pictures that now hang on the walls, and a local artist"
            " painted a map of the estuary on the ceiling of the playroom.",
        ],
    ),
    (
        "jobs",
        "Regional jobless rate falls to 4.1 percent",
        76.0,
        [
            "Unemployment in the Alder region fell to 4.1 percent in February from 4.6"
            " percent a year earlier, the regional statistics office said on Monday. It is"
            " the lowest rate in eleven years.",
            "Most of the new jobs were in construction, health care and fish processing. The"
            " number of people out of work for more than a year fell by a quarter.",
            "Economists said the figures pointed to a tight labour market. Employers in the"
            " harbour district have complained that they cannot find enough welders and"
            " electricians.",
        ],
    ),
    (
        "library",
        "Central library to open on Sunday afternoons",
        33.0,
        [
            "The central library on Castle Street will open on Sunday afternoons from next"
            " month, the city's culture department said on Saturday. It will also stay open"
            " until nine on Thursday evenings.",
            "Librarian Jonas Pike said more students had been asking for a quiet place to"
            " work at weekends. The library will hire four part-time staff to cover the new"
            " hours.",
            "A reading club for teenagers will meet on the first Sunday of each month, and"
            " the children's corner will run story hours in three languages.",
        ],
    ),
    (
        "ferry",
        "Ferry operator adds winter sailings to the islands",
        80.0,
        [
            "Skerry Lines will run two extra ferries a day to the outer islands this winter,"
            " the operator said on Monday, after complaints that islanders were stranded when"
            " storms cancelled the only crossing.",
            "The new sailings leave Port Alder at seven in the morning and four in the"
            " afternoon. Fares stay the same, and children under twelve travel free.",
            "Island councillor Per Holm said the change would let teenagers reach the town's"
            " schools and let fishermen get their catch to market on time.",
        ],
    ),
    (
        "teachers",
        "School district to hire forty teachers",
        98.0,
        [
            "The Port Alder school district will hire forty teachers before the autumn term,"
            " mostly for mathematics, science and languages, the district board decided on"
            " Tuesday.",
            "Classes in the northern suburbs have grown to more than thirty pupils as young"
            " families move into the new housing near the airport road. The board will also"
            " rent six portable classrooms.",
            "The teachers' union welcomed the decision but said pay had to rise to keep"
            " staff, as neighbouring towns offer more.",
        ],
    ),
]

_OUTLETS = [
    "Harbour Wire",
    "Coastline News",
    "Alder Valley Post",
    "Northgate Herald",
    "Estuary Today",
    "The Quay Courier",
    "Gull Point Radio",
    "Fenwick Daily",
    "Westerby Times",
    "Island Messenger",
    "Market Street Journal",
    "Riverside Bulletin",
    "Skerry Sound News",
    "Mill Lane Weekly",
    "Castle Street Chronicle",
    "Dockside Dispatch",
    "Regional Broadcasting",
]

_UPDATES = [
    "More shelters may open later in the day.",
    "The fire service asked people to keep away from the quays.",
    "Police closed the lower end of Quay Road.",
    "The army has been asked to send sandbags.",
    "A helicopter lifted two people from a roof near the fish market.",
    "Drinking water is safe, the water authority said.",
    "The mayor will visit the shelters in the afternoon.",
    "Insurers said they would send assessors on Tuesday.",
]


def data_folders() -> list[Path]:
    """Where the shared data folder is looked for: ``$NEARDUP_DATA`` alone when it is set,
    else ``../shared/data`` from the current folder, then the one beside the source
    checkout (without repeats)."""
    env = os.environ.get("NEARDUP_DATA")
    if env:
        return [Path(env)]
    found = [
        Path.cwd().parent / "shared" / "data",
        Path(__file__).resolve().parents[3] / "shared" / "data",
    ]
    if os.path.abspath(found[0]) == os.path.abspath(found[1]):
        return found[:1]
    return found


def _text(paragraphs: list[str]) -> str:
    return "\n\n".join(paragraphs)


def _article(
    doc_id: str, title: str, hours: float, text: str, source: str, **extra: Any
) -> dict[str, Any]:
    date = _START + dt.timedelta(hours=hours)
    return {
        "id": doc_id,
        "title": title,
        "date": date.isoformat().replace("+00:00", "Z"),
        "source": source,
        "text": text,
        "synthetic": True,
        **extra,
    }


def sample_stories() -> list[Article]:
    """The twelve original stories, each a different subject, in date order."""
    rows = [
        _article(f"sample-{name}", title, hours, _text(paras), SAMPLE_SOURCE)
        for name, title, hours, paras in _STORIES
    ]
    rows.sort(key=lambda r: r["date"])
    return [Article.from_mapping(r) for r in rows]


def sample_corpus() -> list[dict[str, Any]]:
    """The stories and their copies (see the module docstring) as JSON-ready objects with
    ``id``, ``title``, ``date`` (ISO-8601, UTC), ``source``, ``text`` and ``synthetic``, in
    date order: what ``neardup serve --preload`` loads when the Reuters sample is absent."""
    stories = {name: (title, hours, paras) for name, title, hours, paras in _STORIES}
    rows = [
        _article(f"sample-{name}", title, hours, _text(paras), SAMPLE_SOURCE)
        for name, (title, hours, paras) in stories.items()
    ]
    title, hours, paras = stories["flood"]
    for n, outlet in enumerate(_OUTLETS):
        dateline = f"PORT ALDER, March 4 ({outlet}) - "
        update = f"Update: {_UPDATES[n % len(_UPDATES)]}"
        rows.append(
            _article(
                f"sample-flood-{n + 1:02d}",
                title,
                hours + (n + 1) * 9 / 60,
                dateline + _text([*paras, update]),
                outlet,
            )
        )
    rows.append(
        _article(
            "sample-flood-day2",
            "Harbour district begins clean-up as the river falls",
            hours + 28,
            _text(
                [
                    "Residents of the harbour district began pumping water out of their"
                    " cellars on Tuesday as the River Alder fell back below its banks. Most of"
                    " the 600 people who spent the night in shelters have gone home.",
                    paras[2],
                    "Mayor Ingrid Saltmarsh promised a fund of 5 million crowns for families"
                    " whose homes were damaged.",
                    paras[3],
                ]
            ),
            "Port Alder Gazette",
        )
    )
    title, hours, paras = stories["tram"]
    corrected = [paras[0].replace("12 stops", "13 stops"), *paras[1:]]
    rows.append(
        _article(
            "sample-tram-correction",
            title + " (corrected)",
            hours + 20,
            _text(corrected) + "\n\nThis story corrects the number of stops, given as 12.",
            "Harbour Wire",
        )
    )
    title, hours, paras = stories["fish"]
    rows.append(_article("sample-fish-short", title, hours + 3, _text(paras[:2]), "Coastline News"))
    bridge, library = stories["bridge"][2], stories["library"][2]
    rows.append(
        _article(
            "sample-weekend",
            "Weekend in Port Alder: what changes for you",
            36.0,
            _text(
                [
                    bridge[0],
                    "Our guide to the weekend: the farmers' market moves to the north car park"
                    " while the bridge is closed, and the swimming baths keep their winter"
                    " hours until Easter.",
                    library[0],
                ]
            ),
            "Alder Valley Post",
        )
    )
    rows.sort(key=lambda r: (r["date"], r["id"]))
    return rows
