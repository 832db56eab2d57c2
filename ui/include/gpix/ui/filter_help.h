#pragma once
// Help for users, made from the catalog (gpix/catalog.h): what a filter does and when to use
// it in plain words (user text kept here for the filters the catalog describes only
// technically), then its inputs, its parameters with units, ranges and defaults, what it
// gives, and the catalog's exact definition. No filter names are listed anywhere else in ui.
#include <QString>
#include <QStringList>

#include "gpix/catalog.h"

namespace gpix::ui {

// One or two sentences: what the filter does, for someone who does not know the name.
QString filter_summary(const gpix::FilterInfo& info);
// When to reach for it (and what to use instead); empty where there is no user text.
QString filter_when(const gpix::FilterInfo& info);
// The whole help page of a filter, as HTML.
QString filter_help_html(const gpix::FilterInfo& info);
// The filters that have user text but are not in the catalog (must be empty: a test checks).
QStringList filter_help_orphans();

// The Quick Start page, as HTML.
QString quick_start_html();

}  // namespace gpix::ui
