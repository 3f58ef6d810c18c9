"""Rebuild the binary files of bench/allotment-workspace (an invented allotment society).

Writes about/committee-and-sites.docx (python-docx), sites/shed-register.xlsx (openpyxl) and
governance/annual-report-2024-25.pdf (fpdf2, core font Helvetica, two pages with a text layer). The
content is fixed and every date stamped into the files is fixed too (the zip entries' times and the
document properties), so a rebuild gives the same text and, with the same library versions, the
same bytes. The Markdown, text and CSV files of the workspace are written by hand, not here.

The content and the date are kept here; bench/workspace_files.py writes the files.

Run with the project's venv:  .venv/bin/python bench/allotment-workspace-make.py
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import workspace_files

ROOT = Path(__file__).resolve().parent / "allotment-workspace"

#: The one date every file says it was made and last changed.
STAMP = datetime(2025, 11, 10, 9, 0, 0)


# --- about/committee-and-sites.docx ---------------------------------------------------------------

DOCX_PARAGRAPHS = [
    "The Sallowmere Allotment and Community Garden Society is run by a committee of officers "
    "elected at the Annual General Meeting, together with a representative for each of its five "
    "sites. Officers are elected for 3 years and may stand again; site representatives are chosen "
    "each spring by the plot-holders of their site and join the committee without a vote on money.",
    "A site representative shows new tenants their plots, inspects the site in May and August, "
    "arranges the working parties, reports repairs and keeps the site's repairs budget, accounting "
    "to the treasurer for it. The deputy stands in when the representative is away.",
    "The officers after the Annual General Meeting of 6 November 2025 are: chair, Tomasz Brierley; "
    "vice-chair, Anwen Pryce; secretary, Yvonne Marchbank; treasurer, Graham Lusty; lettings "
    "secretary, Shirin Maddox; trading hut manager, Clive Dunmore; show secretary, Petra "
    "Nightingale; community garden coordinator, Ruth Amberley.",
    "The table below gives each site's representative and deputy, what was spent on repairs at "
    "the site in the year to 30 September 2025, and the repairs budget the committee has set for "
    "2025-26.",
]

DOCX_TABLE = [
    [
        "Site",
        "Site representative",
        "Deputy",
        "Repairs spent 2024-25 (pounds)",
        "Repairs budget 2025-26 (pounds)",
    ],
    ["Pennyfield Lane", "Stanley Brisco", "Dora Pilbeam", "1,735", "1,900"],
    ["Cobbler's Bank", "Mervyn Tolley", "Hafsa Qureshi", "1,420", "1,650"],
    ["Rookery Gardens", "Farida Haque", "Owain Lewis-Hart", "1,080", "1,250"],
    ["Tanner's Croft", "Gwen Ollerenshaw", "Ian Pocklington", "735", "600"],
    ["Millrace Meadow", "Ruth Amberley", "Leon Bastable", "380", "450"],
    ["All sites", "", "", "5,350", "5,850"],
]

DOCX_CLOSING = (
    "The Tanner's Croft budget is lower in 2025-26 because its new water main was laid in "
    "2024-25. The land rent the society pays the town council, the water bill and insurance are "
    "met from the general fund and are not shown above; the pavilion roof at Pennyfield Lane is "
    "to be paid for from the 12,000 pounds set aside in the reserves."
)


# --- sites/shed-register.xlsx ---------------------------------------------------------------------

XLSX_HEADER = [
    "Ref",
    "Item",
    "Kept at",
    "Quantity",
    "Year bought",
    "Cost each (pounds)",
    "Weight each (kg)",
    "Notes",
]
XLSX_ROWS: list[list[workspace_files.Cell]] = [
    ["M-01", "Petrol rotavator (5.5 hp)", "Pennyfield shed", 2, 2019, 695, 48.5, "Book at hut"],
    ["M-02", "Petrol mower (53 cm cut)", "Pennyfield shed", 2, 2020, 419, 39.0, "Path mowing"],
    ["M-03", "Petrol brushcutter", "Pennyfield shed", 1, 2021, 329, 7.2, "Harness included"],
    ["M-04", "Petrol hedge trimmer", "Pennyfield shed", 1, 2018, 289, 5.9, "February hedge cut"],
    ["M-05", "Electric garden shredder", "Pennyfield shed", 1, 2022, 549, 27.5, "Compost bays"],
    ["M-06", "Push seed drill", "Pennyfield shed", 1, 2024, 235, 11.3, "Six seed plates"],
    ["T-01", "Wheelbarrow", "All sites", 8, 2016, 64, 14.0, "Two at each allotment site"],
    ["T-02", "Knapsack sprayer (16 litres)", "Pennyfield shed", 3, 2020, 72, 4.6, "Water only"],
    ["T-03", "Post driver", "Pennyfield shed", 2, 2018, 45, 9.8, "Fencing working party"],
    ["T-04", "Soil riddle", "Millrace Meadow", 6, 2023, 18, 1.1, "Community garden"],
    ["T-05", "Tipping trailer (1.8 m by 1.2 m)", "Pennyfield shed", 1, 2015, 780, 165.0, "Towed"],
    [
        "T-06",
        "Water bowser",
        "Pennyfield shed",
        1,
        2019,
        1150,
        None,
        "1,000-litre capacity, towed by car",
    ],
    ["T-07", "Aluminium extension ladder", "Pennyfield shed", 1, 2017, 189, None, "7.4 m long"],
]

XLSX_NOTES = [
    "Register kept by the trading hut manager, Clive Dunmore.",
    "Checked at the stocktake of 28 September 2025.",
    "Weights are of the machine alone, without fuel, water or attachments.",
    "Tanks, bowsers and ladders are listed by capacity or length, not weighed.",
]


# --- governance/annual-report-2024-25.pdf --------------------------------------------------------

PDF_PAGE_1 = [
    ("h", "Sallowmere Allotment and Community Garden Society"),
    ("h", "Annual Report 2024-25"),
    (
        "p",
        "For the year to 30 September 2025. The society lets allotments at Pennyfield Lane, "
        "Cobbler's Bank, Rookery Gardens and Tanner's Croft, and runs the Millrace Meadow "
        "community garden, Sallowmere.",
    ),
    ("s", "1. The year in numbers"),
    (
        "p",
        "At 30 September 2025, 236 of the society's 243 plots and raised beds were let and 7 were "
        "vacant, and the waiting lists held 118 names (30 September 2024: 131). During the year "
        "52 new tenants took plots, 19 tenants gave theirs up and 11 tenancies were ended for "
        "want of cultivation.",
    ),
    (
        "p",
        "The working parties met on 21 Saturdays and gave about 1,150 hours; the community "
        "garden's volunteers gave 1,460 hours more and grew 1,085 kilograms of produce, of which "
        "410 kilograms went to the Sallowmere food bank.",
    ),
    ("s", "2. Chair's foreword"),
    (
        "p",
        "It was the driest summer since the society began keeping records, and the sites used "
        "more water than ever, yet every site came through with good crops. Our thanks go to the "
        "site representatives, the working parties and the trading hut team, none of whom is "
        "paid. - Tomasz Brierley, chair",
    ),
    ("s", "3. The show"),
    (
        "p",
        "The annual show on 13 September 2025 drew 71 exhibitors and 437 entries, both records. "
        "The best-kept plot cup went to Mervyn Tolley of Cobbler's Bank, and the best-kept site "
        "shield to Rookery Gardens for the third year running.",
    ),
]

PDF_PAGE_2 = [
    ("s", "4. Finance"),
    (
        "p",
        "Income for 2024-25 was £31,065 (2023-24: £28,734), made up of plot rents £13,862, water "
        "charges £2,190, trading hut sales £7,845, the show £1,236, community garden memberships "
        "£588, a town council grant for the community garden £4,500, associate subscriptions £145 "
        "and donations £699.",
    ),
    ("p", "Spending for the year was £29,315:"),
    ("l", "Land rent to Sallowmere Town Council: £4,860"),
    ("l", "Water supply (metered, all sites): £3,215"),
    ("l", "Insurance: £1,140"),
    ("l", "Repairs and maintenance (all sites): £5,350"),
    ("l", "Trading hut stock: £6,920"),
    ("l", "Skips and waste: £1,860"),
    ("l", "Show prizes, marquee and judge: £1,295"),
    ("l", "Community garden: £2,140"),
    ("l", "Tools and equipment: £1,585"),
    ("l", "Affiliation fees (county federation and national society): £310"),
    ("l", "Administration and postage: £640"),
    (
        "p",
        "The surplus of £1,750 was added to the reserves, which stood at £24,380 on 30 September "
        "2025. Of the reserves, £12,000 is set aside for a new roof on the Pennyfield Lane "
        "pavilion, due in 2027.",
    ),
    ("s", "5. Thank you"),
    (
        "p",
        "The society thanks Sallowmere Town Council, the county wildlife trust, the district "
        "beekeepers and every member who gave time to a working party, the show or the "
        "community garden.",
    ),
    ("p", "Sallowmere Allotment and Community Garden Society, The Pavilion, Pennyfield Lane."),
]


def main() -> None:
    workspace_files.write_docx(
        ROOT / "about" / "committee-and-sites.docx",
        title="Committee, site representatives and repairs budgets",
        subtitle="Sallowmere Allotment and Community Garden Society, November 2025",
        paragraphs=DOCX_PARAGRAPHS,
        table=DOCX_TABLE,
        closing=DOCX_CLOSING,
        author="Yvonne Marchbank",
        stamp=STAMP,
    )
    workspace_files.write_xlsx(
        ROOT / "sites" / "shed-register.xlsx",
        header=XLSX_HEADER,
        rows=XLSX_ROWS,
        notes=XLSX_NOTES,
        title="Shared shed register",
        creator="Clive Dunmore",
        stamp=STAMP,
    )
    workspace_files.write_pdf(
        ROOT / "governance" / "annual-report-2024-25.pdf",
        pages=[PDF_PAGE_1, PDF_PAGE_2],
        title="Annual Report 2024-25",
        author="Sallowmere Allotment and Community Garden Society",
        stamp=STAMP,
    )
    for name in (
        "about/committee-and-sites.docx",
        "sites/shed-register.xlsx",
        "governance/annual-report-2024-25.pdf",
    ):
        print(name, (ROOT / name).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
