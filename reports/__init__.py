"""Compliance reports: a PySpark job over many runs' result records.

Entry points: ``reports.cli.main`` (``conformance report ...``),
``reports.pipeline.run_report`` (the job, given a SparkSession) and
``reports.allure.generate`` (the Allure 3 HTML report with history).
See docs/reports.md.
"""
