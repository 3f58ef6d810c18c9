"""Writes ``bench/document-share``: a made-up company's document share for the document benches.

Halvard Instruments makes field spectrometers. Its share has 25 files in department folders —
Markdown, PDF and Word, as such shares are — with distractors (HR policies, IT runbooks that
answer nothing asked) and superseded versions kept beside the current ones: an archived concept
with the old price, a draft of the quarterly results, last year's budget, an earlier test report.
Their old figures count as wrong. :data:`QUESTIONS` (also written as
``document-share-questions.json``, for other benches) says for each question which document
answers it, the current fact, and the stale fact an answer must not state as current.

Run ``python bench/make_document_share.py`` to write it again (the files are committed; PDFs carry
their creation time, so bytes differ from run to run, the text does not).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.documents import docx_file, pdf_file  # noqa: E402

SHARE = ROOT / "bench" / "document-share"
#: The question set, beside the share (inside it, it would be indexed as a document).
QUESTIONS_FILE = ROOT / "bench" / "document-share-questions.json"

#: question, answering document, current fact, stale fact ("" when no stale version exists).
QUESTIONS = (
    (
        "What is the list price of the Kestrel spectrometer?",
        "product/kestrel-product-brief.docx",
        "56,000",
        "52,000",
    ),
    (
        "When does the Kestrel launch?",
        "product/kestrel-product-brief.docx",
        "September 2026",
        "March 2026",
    ),
    ("How much does the Kestrel weigh?", "product/kestrel-product-brief.docx", "4.2 kg", "5.1 kg"),
    (
        "What was Halvard's revenue in the second quarter of 2026?",
        "finance/q2-2026-results.pdf",
        "18.4 million",
        "17.9 million",
    ),
    ("What was the gross margin in Q2 2026?", "finance/q2-2026-results.pdf", "41.5", "39.8"),
    (
        "How many days of annual leave do employees get?",
        "hr/leave-policy.docx",
        "27 days",
        "24 days",
    ),
    (
        "What is the minimum password length?",
        "it/password-policy.docx",
        "14 characters",
        "10 characters",
    ),
    (
        "What is the research and development budget?",
        "finance/budget-2026.md",
        "2.6 million",
        "2.1 million",
    ),
    (
        "How long does the Kestrel battery last?",
        "engineering/kestrel-test-report.pdf",
        "11 hours",
        "8 hours",
    ),
    ("How many weeks of parental leave are paid?", "hr/parental-leave.pdf", "16 weeks", ""),
    ("At what time do the nightly backups run?", "it/backup-runbook.pdf", "02:30", ""),
    (
        "What is the daily allowance for business travel?",
        "finance/travel-expense-policy.docx",
        "65 euros",
        "",
    ),
    (
        "Which company supplies the Kestrel detector?",
        "operations/supplier-list.docx",
        "Brightwater",
        "",
    ),
    (
        "How many deals are in the second-quarter sales pipeline?",
        "sales/q2-pipeline.docx",
        "42 deals",
        "",
    ),
    ("How long is the Kestrel warranty?", "product/kestrel-faq.md", "three years", ""),
    ("Who distributes Halvard products in Japan?", "sales/distributors.md", "Kaito Optics", ""),
)

MARKDOWN = {
    "README.md": """# Halvard Instruments document share

Last reviewed: 2026-03-02

Each department keeps its own folder. Archived documents stay under `archive/` for reference only.
Halvard Instruments designs and builds field spectrometers in Tromsø and Rotterdam.
""",
    "product/kestrel-faq.md": """# Kestrel: frequently asked questions

Updated: 12 February 2026

## Warranty
Every Kestrel comes with a warranty of three years, covering parts and labour.

## Calibration
Calibration is due once a year; the service centre returns instruments within ten working days.
""",
    "product/archive/kestrel-concept-2025.md": """# Kestrel concept paper

Date: 14 April 2025

## Summary
The Kestrel is a rugged field spectrometer for geologists and mining surveyors.

## Price and launch
The planned list price of the Kestrel is $52,000 per instrument. The launch is planned for
March 2026.

## Hardware
The concept unit weighs 5.1 kg with its battery and carries a cooled detector.
""",
    "finance/budget-2025.md": """# Budget

Approved: 2024-12-10

## Research and development
The research and development budget is 2.1 million euros for the year.

## Facilities
Facilities receive 0.8 million euros, mostly for the Rotterdam workshop.
""",
    "finance/budget-2026.md": """# Budget

Approved: 2025-12-09

## Research and development
The research and development budget is 2.6 million euros for the year, most of it for the
Kestrel's second detector.

## Facilities
Facilities receive 0.9 million euros.
""",
    "finance/expense-claims-faq.md": """# Expense claims: questions and answers

Updated: 2026-01-15

Claims are filed in the finance portal within 30 days, with a photo of every receipt. Mileage is
paid at 0.30 euros per kilometre. Claims above 500 euros need a manager's approval.
""",
    "hr/onboarding-checklist.md": """# Onboarding checklist

Updated: 2025-11-01

- Day one: laptop, badge and a tour of the workshop.
- Week one: safety training and meeting the team lead.
- Month one: the first review with the manager, and leave entitlement explained.
""",
    "hr/archive/leave-policy-2023.md": """# Leave policy

Effective: 1 January 2023

Employees receive 24 days of annual leave, plus public holidays. Up to five days may be carried
over into the next year.
""",
    "it/vpn-runbook.md": """# VPN runbook

Updated: 2026-02-20

The VPN gateway is vpn2.halvard.example on port 1194. Restart the gateway service when more than
ten users report dropped tunnels, then check the certificate expiry dates.
""",
    "engineering/kestrel-test-report-v1.md": """# Kestrel test report

Date: 2025-09-18

## Battery
In field trials the prototype battery lasted 8 hours at 5 °C.

## Drop test
The prototype survived drops from 1.2 m onto concrete.
""",
    "engineering/coding-standards.md": """# Coding standards

Updated: 2025-06-30

Firmware is written in C17 and checked with clang-tidy. Every pull request needs one review and a
passing hardware-in-the-loop run. Functions stay under 80 lines.
""",
    "sales/distributors.md": """# Distributors

Updated: 2026-01-08

| Country | Distributor |
|---|---|
| Japan | Kaito Optics, Osaka |
| Chile | Andes Survey Supply |
| Canada | Northern Field Instruments |
""",
    "operations/warehouse-locations.md": """# Warehouse locations

Updated: 2025-10-05

Finished instruments ship from the Rotterdam warehouse. Spare parts are kept in Tromsø. Returns
go to Rotterdam, bay 4.
""",
}


def write_share(share: Path = SHARE) -> None:
    """Write the whole share into ``share`` (emptied first)."""
    if share.exists():
        shutil.rmtree(share)
    for relative, text in MARKDOWN.items():
        path = share / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    docx_file(
        share / "product/kestrel-product-brief.docx",
        "Kestrel product brief",
        [
            ("", "Date: 10 February 2026. This brief replaces the 2025 concept paper."),
            ("Price", "The list price of the Kestrel is $56,000 per instrument."),
            ("Launch", "The Kestrel launches on 14 September 2026 at the Geoscience fair."),
            ("Hardware", "The production Kestrel weighs 4.2 kg with its battery."),
        ],
    )
    pdf_file(
        share / "finance/q2-2026-results.pdf",
        "Quarterly results, second quarter 2026",
        [
            ("", "Date: 2026-07-21"),
            ("Revenue", "Revenue in the second quarter of 2026 was 18.4 million euros."),
            ("Margin", "The gross margin was 41.5 per cent, helped by the first Kestrel orders."),
        ],
    )
    docx_file(
        share / "finance/archive/q2-2026-results-draft.docx",
        "Quarterly results, second quarter 2026 (draft)",
        [
            ("", "Date: 2026-07-08. Draft for the board; figures not yet audited."),
            ("Revenue", "Revenue in the second quarter of 2026 was 17.9 million euros."),
            ("Margin", "The gross margin was 39.8 per cent."),
        ],
    )
    docx_file(
        share / "finance/travel-expense-policy.docx",
        "Travel expense policy",
        [
            ("", "Effective: 1 March 2026"),
            ("Allowance", "The daily allowance for business travel is 65 euros."),
            ("Booking", "Flights are booked in economy through the travel desk."),
        ],
    )
    docx_file(
        share / "hr/leave-policy.docx",
        "Leave policy",
        [
            ("", "Effective: 1 January 2026"),
            ("Annual leave", "Employees receive 27 days of annual leave, plus public holidays."),
        ],
    )
    pdf_file(
        share / "hr/parental-leave.pdf",
        "Parental leave",
        [
            ("", "Effective: 2025-09-01"),
            ("Pay", "Parents receive 16 weeks of paid parental leave."),
        ],
    )
    docx_file(
        share / "it/password-policy.docx",
        "Password policy",
        [
            ("", "Revised: 2026-01-12"),
            ("Length", "Passwords must be at least 14 characters long."),
            ("Rotation", "Passwords are changed only after a suspected compromise."),
        ],
    )
    pdf_file(
        share / "it/archive/password-policy-2022.pdf",
        "Password policy (2022)",
        [("", "Revised: 2022-05-03"), ("Length", "Passwords must be at least 10 characters long.")],
    )
    pdf_file(
        share / "it/backup-runbook.pdf",
        "Backup runbook",
        [
            ("", "Updated: 2026-02-02"),
            ("Schedule", "The nightly backups run at 02:30 and are kept for 35 days."),
        ],
    )
    pdf_file(
        share / "engineering/kestrel-test-report.pdf",
        "Kestrel test report",
        [
            ("", "Date: 2026-05-30"),
            ("Battery", "In field trials the production battery lasted 11 hours at 5 °C."),
            ("Drop test", "The production unit survived drops from 1.5 m onto concrete."),
        ],
    )
    docx_file(
        share / "sales/q2-pipeline.docx",
        "Sales pipeline, second quarter",
        [("", "Date: 2026-06-28"), ("Pipeline", "The second-quarter pipeline holds 42 deals.")],
        [("Region", "Deals"), ("Europe", "25"), ("Americas", "12"), ("Asia", "5")],
    )
    docx_file(
        share / "operations/supplier-list.docx",
        "Supplier list",
        [("", "Updated: 2026-02-14")],
        [
            ("Part", "Supplier"),
            ("Kestrel detector", "Brightwater Photonics"),
            ("Casing", "Nordic Polymer"),
            ("Battery cells", "Voltaris"),
        ],
    )
    QUESTIONS_FILE.write_text(
        json.dumps(
            [{"question": q, "document": d, "fact": f, "stale": s} for q, d, f, s in QUESTIONS],
            indent=2,
            ensure_ascii=False,
        )
        + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    write_share()
    print(f"wrote {SHARE}")
