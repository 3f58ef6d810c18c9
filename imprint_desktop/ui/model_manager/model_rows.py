"""What a row of the model windows' lists says about a model, and the colour that says how it fits.

The Find and Installed tabs (:mod:`.window`) and the Recommended tab (:mod:`.recommended_tab`)
each list models of another kind: a repository found on the hub, one of its models, a model on
this computer, a recommended model. Each function here gives one row's cells, the first holding
what the row stands for (:mod:`imprint_desktop.ui.tables`), so how a model reads in a list is
decided in one place and the tabs only fill their tables and answer clicks.
"""

from __future__ import annotations

from PySide6.QtGui import QColor
from PySide6.QtWidgets import QTableWidgetItem

from imprint_desktop.core.models import (
    Fit,
    InstalledModel,
    Recommendation,
    RemoteModel,
    RepoSummary,
    Role,
    Verdict,
    human_size,
)
from imprint_desktop.core.models.embedders import EmbedderRecommendation
from imprint_desktop.ui.inert import tooltip
from imprint_desktop.ui.tables import cell

#: How a hub file fits this computer, as the Find tab colours it.
FIT_COLOURS = {Fit.FITS: "#1b7f3b", Fit.TIGHT: "#a86b00", Fit.TOO_BIG: "#b3261e"}

#: A recommended model's verdict: its colour on a light background, and on a dark one.
VERDICT_COLOURS = {
    Verdict.RUNS_WELL: ("#1b7f3b", "#5cc77a"),
    Verdict.RUNS_SLOWLY: ("#a86b00", "#e0a030"),
    Verdict.DOES_NOT_FIT: ("#b3261e", "#ff7b72"),
}

Row = list[QTableWidgetItem]


def repository_row(result: RepoSummary) -> Row:
    """Repository, downloads, last updated: one search result."""
    when = result.last_modified.date().isoformat() if result.last_modified else ""
    return [
        cell(result.repo_id, result.repo_id),
        cell(f"{result.downloads:,}", align_right=True),
        cell(when),
    ]


def hub_model_row(model: RemoteModel) -> Row:
    """Model, quantization, size, fit: one model of a repository on the hub."""
    parts = f" ({len(model.files)} parts)" if len(model.files) > 1 else ""
    fit = cell(model.fit.text)
    fit.setToolTip(tooltip(f"{model.fit.text} (file, context memory and working buffers)"))
    colour = FIT_COLOURS.get(model.fit.fit)
    if colour:
        fit.setForeground(QColor(colour))
    return [
        cell(model.name + parts, model.name),
        cell(model.quantization or "?"),
        cell(human_size(model.size), align_right=True),
        fit,
    ]


def installed_row(model: InstalledModel, in_use: bool) -> Row:
    """Model, source, size, quantization, state: one model on this computer."""
    state = "In use" if in_use else ("Ready" if model.usable else model.problem)
    return [
        cell(model.name, str(model.path)),
        cell(model.source.value),
        cell(human_size(model.size), align_right=True),
        cell(model.quantization or "?"),
        cell(state),
    ]


def recommendation_row(entry: Recommendation, on_dark: bool) -> Row:
    """Model, size, fit, why, and an empty state (the tab fills it in): one recommended model.
    The best fit is bold; the verdict is coloured for a dark background when ``on_dark``."""
    name = entry.model.name + (f"  ({entry.role.words.lower()})" if entry.role else "")
    first = cell(name, entry.model.id)
    if entry.role is Role.BEST:
        font = first.font()
        font.setBold(True)
        first.setFont(font)
    fit = cell(entry.fit.verdict.words)
    light, dark = VERDICT_COLOURS[entry.fit.verdict]
    fit.setForeground(QColor(dark if on_dark else light))
    why = cell(entry.fit.reason)
    why.setToolTip(tooltip(entry.fit.reason))
    return [first, cell(human_size(entry.model.size), align_right=True), fit, why, cell("")]


def embedder_row(entry: EmbedderRecommendation, on_dark: bool) -> Row:
    """Model, size, fit, why, and an empty state: one recommended embedding model."""
    fit = cell(entry.fit.verdict.words)
    light, dark = VERDICT_COLOURS[entry.fit.verdict]
    fit.setForeground(QColor(dark if on_dark else light))
    why = cell(f"{entry.model.good_at} {entry.fit.reason}")
    why.setToolTip(tooltip(why.text()))
    name = cell(entry.model.name, entry.model.id)
    return [name, cell(human_size(entry.model.size), align_right=True), fit, why, cell("")]
