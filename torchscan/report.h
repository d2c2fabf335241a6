// The report types and what to do with a report: the summary table,
// strict checking and compare_reports (all in report/, torch-free).

#ifndef TORCHSCAN_TORCHSCAN_REPORT_H_
#define TORCHSCAN_TORCHSCAN_REPORT_H_

#include "report/analysis_report.h"
#include "report/compare.h"
#include "report/flop_report.h"
#include "report/json_io.h"
#include "report/strict.h"
#include "report/summary.h"

#endif  // TORCHSCAN_TORCHSCAN_REPORT_H_
