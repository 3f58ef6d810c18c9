"""Rebuild the binary files of bench/fresh-workspace (an invented mountain rescue team).

Writes about/team-structure.docx (python-docx), operations/equipment-register.xlsx (openpyxl) and
operations/annual-report-2024.pdf (fpdf2, core font Helvetica, two pages with a text layer). The
content is fixed and every date stamped into the files is fixed too (the zip entries' times and the
document properties), so a rebuild gives the same text and, with the same library versions, the
same bytes. The Markdown, text and CSV files of the workspace are written by hand, not here.

The content and the date are kept here; bench/workspace_files.py writes the files.

Run with the project's venv:  .venv/bin/python bench/fresh-workspace-make.py
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workspace_files

ROOT = Path(__file__).resolve().parent / "fresh-workspace"

#: The one date every file says it was made and last changed.
STAMP = datetime(2025, 4, 14, 9, 0, 0)


# --- about/team-structure.docx -------------------------------------------------------------------

DOCX_PARAGRAPHS = [
    "Operational members of Harrowdale Mountain Rescue Team belong to one of three sections, by "
    "where they live: the Northern section around Ravensby and the head of the valley, the "
    "Central section around Beckfoot, and the Southern section around Tarnside and the lower "
    "dale. When the pagers go off, the controller sends the first party from whichever section "
    "is nearest the casualty, and the other sections meet at the Beckfoot base with the vehicles.",
    "Every section keeps its own rota of party leaders and drivers, and runs one extra training "
    "evening a month on its own ground as well as the team's Tuesday evenings at the base. A "
    "member qualifies as a casualty carer after a 60-hour course and an assessment, renewed "
    "every 3 years.",
    "The officers after the Annual General Meeting of 11 March 2025 are: team leader, Priya Venn; "
    "deputy team leaders, Tom Birkett and Hannah Okafor; secretary, Gwen Rigg; treasurer, Martin "
    "Sowerby; equipment officer, Dan Ellwood; training officer, Sue Marr; casualty care lead, "
    "Dr Imran Sheikh; dog section coordinator, Kath Dodgson. Officers are elected for 3 years and "
    "may stand again.",
    "The table below gives the strength of each section at 1 April 2025, with the training hours "
    "its members logged in 2024 (team evenings, section evenings and courses together).",
]

DOCX_TABLE = [
    [
        "Section",
        "Operational members",
        "Casualty carers",
        "Party leaders",
        "Search dog teams",
        "Training hours 2024",
    ],
    ["Northern", "15", "11", "4", "1", "1,212"],
    ["Central", "18", "12", "6", "2", "1,486"],
    ["Southern", "13", "10", "3", "1", "1,073"],
    ["Team total", "46", "33", "13", "4", "3,771"],
]

DOCX_CLOSING = (
    "Trainees are attached to a section from their first month but are not counted above; there "
    "were 7 at 1 April 2025. Supporting members belong to no section."
)


# --- operations/equipment-register.xlsx ----------------------------------------------------------

XLSX_HEADER = [
    "Ref",
    "Item",
    "Quantity",
    "Weight each (kg)",
    "Year bought",
    "Cost each (pounds)",
    "Kept at",
]
XLSX_ROWS: list[list[workspace_files.Cell]] = [
    ["VEH-01", "Land Rover Defender 110 ambulance 'Harrowdale 1'", 1, 3150, 2016, 48900, "Bay 1"],
    ["VEH-02", "Land Rover Defender 130 'Harrowdale 2'", 1, 3210, 2021, 56300, "Bay 2"],
    ["VEH-03", "Control vehicle 'Harrowdale Control'", 1, 3480, 2018, 61750, "Bay 3"],
    ["STR-01", "Bell stretcher (two-part, with wheel)", 2, 16.5, 2017, 3450, "Bays 1 and 2"],
    ["VAC-01", "Vacuum mattress", 2, 6.8, 2020, 1280, "Bays 1 and 2"],
    ["CB-01", "Casualty bag", 3, 4.2, 2019, 640, "Rope store"],
    ["ROPE-02", "Rope rescue kit (ropes, anchors, descenders)", 1, 38.5, 2024, 9860, "Rope store"],
    ["AED-01", "Defibrillator", 4, 2.1, 2022, 1395, "Vehicles and base"],
    ["ENT-01", "Entonox pain relief kit", 3, 5.9, 2021, 420, "Vehicles"],
    ["RAD", "Digital handheld radio", 38, 0.4, 2019, 612, "Control room"],
    ["DRN-01", "Thermal imaging drone", 1, 1.6, 2023, 7840, "Control room"],
    ["GEN-02", "Portable floodlight set", 2, 11.2, 2015, 930, "Bay 3"],
]

XLSX_NOTES = [
    "Equipment register kept by the equipment officer, Dan Ellwood.",
    "Checked at the monthly kit check; last full audit 14 April 2025.",
    "Vehicle weights are unladen kerb weights.",
]


# --- operations/annual-report-2024.pdf -----------------------------------------------------------

PDF_PAGE_1 = [
    ("h", "Harrowdale Mountain Rescue Team"),
    ("h", "Annual Report 2024"),
    ("s", "1. The year in numbers"),
    (
        "p",
        "The team was called out 131 times in 2024, against 123 times in 2023, and helped 148 "
        "people. Members gave 7,589 volunteer hours on callouts, training and fundraising. "
        "August was the busiest month, with 23 callouts; February was the quietest, with 4.",
    ),
    (
        "p",
        "A helicopter, from the Coastguard or the air ambulance, took part in 34 of the "
        "callouts, or 26 per cent of the total, most of them on Coldbeck Pike and Black Knott. "
        "The search dogs were deployed 49 times. Sadly, 4 of the people we went to had died.",
    ),
    ("s", "2. Team leader's foreword"),
    (
        "p",
        "This was the busiest year in the team's 63 years. That we met it is owed to the "
        "members, who left work, meals and beds on 131 occasions, and to the families and "
        "employers who let them go. I thank in particular the Southern section, which covered "
        "11 callouts in one week in August while the rest of the team was committed on Wennick "
        "Crags. - Priya Venn, team leader",
    ),
    ("s", "3. Training"),
    (
        "p",
        "The team held 48 Tuesday training evenings and 6 weekend exercises, two of them with "
        "neighbouring teams. Five trainees passed their assessment and became operational "
        "members, and 9 members renewed their casualty care qualification.",
    ),
]

PDF_PAGE_2 = [
    ("s", "4. Finance"),
    (
        "p",
        "Income for 2024 was £186,420 (2023: £171,905), made up of donations and collections "
        "£74,310, grants £52,800, legacies £31,500, fundraising events £21,640, and Gift Aid and "
        "other income £6,170.",
    ),
    ("p", "Spending for the year was £162,780:"),
    ("l", "Vehicle fuel, servicing and repairs: £21,460"),
    ("l", "Base running costs (heat, power, rates and maintenance): £28,615"),
    ("l", "Insurance: £14,200"),
    ("l", "Medical supplies and drugs: £9,835"),
    ("l", "Training and courses: £11,370"),
    ("l", "Equipment purchases: £47,300"),
    ("l", "Communications (radios, repeater and callout app): £10,940"),
    ("l", "Administration and fundraising costs: £19,060"),
    (
        "p",
        "The surplus of £23,640 was added to the reserves, which stood at £142,600 on "
        "31 December 2024. Equipment purchases included a new rope rescue kit (£9,860) and a "
        "deposit towards the replacement of Harrowdale 1, due in 2026.",
    ),
    ("s", "5. Thank you"),
    (
        "p",
        "The team thanks the Ravensby Show committee, the Drovers Inn, the county council, the "
        "national park authority, and the many walkers who put money in our boxes. Every pound "
        "given to the team is spent on rescue in Harrowdale.",
    ),
    ("p", "Harrowdale Mountain Rescue Team is a registered charity. Beckfoot Base, Ravensby."),
]


def main() -> None:
    workspace_files.write_docx(
        ROOT / "about" / "team-structure.docx",
        title="Team structure and officers",
        subtitle="Harrowdale Mountain Rescue Team, April 2025",
        paragraphs=DOCX_PARAGRAPHS,
        table=DOCX_TABLE,
        closing=DOCX_CLOSING,
        author="Gwen Rigg",
        stamp=STAMP,
    )
    workspace_files.write_xlsx(
        ROOT / "operations" / "equipment-register.xlsx",
        header=XLSX_HEADER,
        rows=XLSX_ROWS,
        notes=XLSX_NOTES,
        title="Equipment register",
        creator="Dan Ellwood",
        stamp=STAMP,
    )
    workspace_files.write_pdf(
        ROOT / "operations" / "annual-report-2024.pdf",
        pages=[PDF_PAGE_1, PDF_PAGE_2],
        title="Annual Report 2024",
        author="Harrowdale Mountain Rescue Team",
        stamp=STAMP,
    )
    for name in (
        "about/team-structure.docx",
        "operations/equipment-register.xlsx",
        "operations/annual-report-2024.pdf",
    ):
        print(name, (ROOT / name).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
