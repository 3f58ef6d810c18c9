"""Rebuild the binary files of bench/civic-workspace (an invented community theatre company).

Writes about/company-structure.docx (python-docx), productions/stage-and-wardrobe-register.xlsx
(openpyxl) and governance/annual-report-2024-25.pdf (fpdf2, core font Helvetica, two pages with a
text layer). The content is fixed and every date stamped into the files is fixed too (the zip
entries' times and the document properties), so a rebuild gives the same text and, with the same
library versions, the same bytes. The Markdown, text and CSV files of the workspace are written by
hand, not here.

The content and the date are kept here; bench/workspace_files.py writes the files.

Run with the project's venv:  .venv/bin/python bench/civic-workspace-make.py
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workspace_files

ROOT = Path(__file__).resolve().parent / "civic-workspace"

#: The one date every file says it was made and last changed.
STAMP = datetime(2025, 10, 20, 9, 0, 0)


# --- about/company-structure.docx ----------------------------------------------------------------

DOCX_PARAGRAPHS = [
    "The Hollinsford Players are run by a committee of officers elected at the Annual General "
    "Meeting, and the work of putting on a production is shared between five departments. Acting "
    "members belong to no department unless they also work backstage; a member may belong to more "
    "than one department, and most of the stage crew also work front of house on the nights they "
    "are not needed backstage.",
    "Each department has a head, appointed by the committee each September, who orders materials, "
    "keeps the department's store and accounts to the treasurer for its budget. A production's "
    "own costs (royalties, hired equipment and the set built for it) are met from the production "
    "budget, not from the departments.",
    "The officers after the Annual General Meeting of 14 October 2025 are: chair, Nadia Sorensen; "
    "vice-chair, Priti Halsall; secretary, Jill Carbery; treasurer, Robert Haig; production "
    "manager, Dominic Foye; wardrobe manager, Maureen Tulley; youth theatre leader, Sam Iredale; "
    "membership secretary, Ffion Lake; front of house manager, Colin Bright. Officers are elected "
    "for 3 years and may stand again.",
    "The table below gives each department's head and adult members at 1 October 2025, what it "
    "spent in the 2024-25 season, and the budget the committee has set for 2025-26.",
]

DOCX_TABLE = [
    [
        "Department",
        "Head of department",
        "Adult members",
        "Spent 2024-25 (pounds)",
        "Budget 2025-26 (pounds)",
    ],
    ["Stage and set", "Dominic Foye", "19", "9,480", "10,200"],
    ["Lighting and sound", "Lewis Archer", "8", "6,215", "5,600"],
    ["Wardrobe and props", "Maureen Tulley", "11", "3,860", "4,350"],
    ["Front of house", "Colin Bright", "26", "1,940", "2,100"],
    ["Youth theatre", "Sam Iredale", "6", "2,470", "2,800"],
    ["All departments", "", "70", "23,965", "25,050"],
]

DOCX_CLOSING = (
    "The lighting and sound budget is lower in 2025-26 because the 12 LED profile spotlights "
    "bought in 2022 have replaced the old lamps. The building's running costs are met from the "
    "general fund and are not shown above."
)


# --- productions/stage-and-wardrobe-register.xlsx ------------------------------------------------

XLSX_HEADER = [
    "Ref",
    "Item",
    "Department",
    "Quantity",
    "Year bought",
    "Cost each (pounds)",
    "Weight each (kg)",
    "Notes",
]
XLSX_ROWS: list[list[workspace_files.Cell]] = [
    ["LX-01", "Follow spot (1200 W)", "Lighting", 2, 2018, 1850, 18.4, "Gallery positions"],
    ["LX-02", "LED profile spotlight", "Lighting", 12, 2022, 685, 7.9, "Auditorium lighting bar"],
    ["LX-03", "LED wash light", "Lighting", 16, 2021, 540, 6.2, "Stage bars"],
    ["LX-04", "Lighting desk (96 channels)", "Lighting", 1, 2018, 4200, 14.5, "Control room"],
    ["SND-01", "Radio microphone kit", "Sound", 8, 2023, 395, 0.3, "Control room"],
    ["SND-02", "Powered speaker", "Sound", 4, 2018, 760, 21.6, "Proscenium"],
    ["STG-01", "Counterweight", "Stage", 240, 2018, 14, 12.5, "Fly gallery"],
    ["STG-02", "Rostrum (2.4 m by 1.2 m)", "Stage", 10, 2017, 310, 38.0, "Scene dock"],
    [
        "STG-03",
        "Cyclorama cloth",
        "Stage",
        1,
        2018,
        2650,
        None,
        "11 m wide by 6.5 m drop, flame-retardant",
    ],
    ["STG-04", "Black serge masking leg", "Stage", 8, 2018, 215, None, "2 m wide by 6.5 m drop"],
    ["WAR-01", "Victorian costume set (men's)", "Wardrobe", 14, 2019, 85, 1.6, "Wardrobe room"],
    ["WAR-02", "Pantomime dame costume", "Wardrobe", 6, 2022, 240, 4.8, "Wardrobe room"],
    ["WAR-03", "Industrial sewing machine", "Wardrobe", 2, 2020, 1180, 29.0, "Wardrobe room"],
    ["PRP-01", "Spinning wheel (working)", "Props", 1, 2023, 145, 9.7, "Props store"],
]

XLSX_NOTES = [
    "Register kept by the production manager, Dominic Foye, and the wardrobe manager.",
    "Checked at the August stocktake; last full audit 23 August 2025.",
    "Weights are of the unit alone, without clamps, cables or hampers.",
    "Cloths and drapes are measured, not weighed.",
]


# --- governance/annual-report-2024-25.pdf --------------------------------------------------------

PDF_PAGE_1 = [
    ("h", "Hollinsford Players"),
    ("h", "Annual Report 2024-25"),
    (
        "p",
        "For the year to 31 July 2025. The Hollinsford Players is a registered charity that owns "
        "and runs the Chapel Theatre, Tanyard Street, Hollinsford.",
    ),
    ("s", "1. The season in numbers"),
    (
        "p",
        "The company gave 4 productions and 30 performances in 2024-25, against 28 performances "
        "in 2023-24, to a total audience of 4,125 (2023-24: 3,773). The average house was 138, "
        "or 82 per cent of the 168 seats. The pantomime, Cinderella, played 12 times to 1,779 "
        "people and sold out 9 of its performances.",
    ),
    (
        "p",
        "Members gave an estimated 11,400 volunteer hours to productions, front of house and the "
        "upkeep of the building. Other groups hired the auditorium on 46 days and the Schoolroom "
        "for 612 hours, and 131 costumes went out on hire.",
    ),
    ("s", "2. Chair's foreword"),
    (
        "p",
        "Seven years after we reopened, the rebuilt theatre is doing what we hoped: more people "
        "came to our productions this season than in any season since 2018, and the auditorium "
        "and Schoolroom were busier than ever with other groups. None of it would happen without "
        "the members who build, sew, rig, act, sell tickets and pour drinks, unpaid, all year. "
        "- Nadia Sorensen, chair",
    ),
    ("s", "3. The Young Players"),
    (
        "p",
        "The youth theatre had 41 members in 2 groups. Its devised production, Weathervane, "
        "played 4 times in June 2025 to 486 people, and 16 Young Players sang in the chorus of "
        "Cinderella. Two members began drama school courses in September 2025.",
    ),
]

PDF_PAGE_2 = [
    ("s", "4. Finance"),
    (
        "p",
        "Income for 2024-25 was £93,549 (2023-24: £86,212), made up of ticket sales £49,784, hire "
        "of the theatre and Schoolroom £14,620, bar and refreshments £9,870, grants £7,500, "
        "donations and Gift Aid £6,305, membership subscriptions £4,130 and costume hire £1,340.",
    ),
    ("p", "Spending for the year was £77,200:"),
    ("l", "Performing rights, royalties and scripts: £8,740"),
    ("l", "Sets and stage: £9,480"),
    ("l", "Lighting and sound: £6,215"),
    ("l", "Wardrobe: £3,860"),
    ("l", "Youth theatre: £2,470"),
    ("l", "Front of house and bar stock: £7,315"),
    ("l", "Building (heat, power, rates and insurance): £24,960"),
    ("l", "Repairs and maintenance: £6,105"),
    ("l", "Publicity and printing: £4,870"),
    ("l", "Administration: £3,185"),
    (
        "p",
        "The surplus of £16,349 was added to the reserves, which stood at £58,400 on 31 July "
        "2025. Of the reserves, £20,000 is set aside for repairs to the chapel roof, due in 2027.",
    ),
    ("s", "5. Thank you"),
    (
        "p",
        "The company thanks the district council, the Hollinsford Town Trust, the businesses who "
        "advertise in our programmes, and every member of our audiences. Every pound given to the "
        "Players is spent on theatre in Hollinsford.",
    ),
    ("p", "Hollinsford Players is a registered charity. The Chapel Theatre, Tanyard Street."),
]


def main() -> None:
    workspace_files.write_docx(
        ROOT / "about" / "company-structure.docx",
        title="Company structure and departments",
        subtitle="Hollinsford Players, October 2025",
        paragraphs=DOCX_PARAGRAPHS,
        table=DOCX_TABLE,
        closing=DOCX_CLOSING,
        author="Jill Carbery",
        stamp=STAMP,
    )
    workspace_files.write_xlsx(
        ROOT / "productions" / "stage-and-wardrobe-register.xlsx",
        header=XLSX_HEADER,
        rows=XLSX_ROWS,
        notes=XLSX_NOTES,
        title="Stage and wardrobe register",
        creator="Dominic Foye",
        stamp=STAMP,
    )
    workspace_files.write_pdf(
        ROOT / "governance" / "annual-report-2024-25.pdf",
        pages=[PDF_PAGE_1, PDF_PAGE_2],
        title="Annual Report 2024-25",
        author="Hollinsford Players",
        stamp=STAMP,
    )
    for name in (
        "about/company-structure.docx",
        "productions/stage-and-wardrobe-register.xlsx",
        "governance/annual-report-2024-25.pdf",
    ):
        print(name, (ROOT / name).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
