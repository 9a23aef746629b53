"""Compliance reports: a PySpark job over many runs' result records.

Entry points: ``reports.cli.main`` (``conformance report ...``),
``reports.pipeline.run_report`` (the job, given a SparkSession) and
``reports.allure.generate`` (the Allure 3 HTML report with history).
See docs/reports.md.

The job depends on the harness only through three leaf modules that import nothing else from
the project: ``conformance.record_format`` (the record schema both sides use),
``conformance.paths`` (where the shipped docs are) and ``conformance.spec_links`` (each spec's
public URL and section anchors). tests/harness/test_harness_import_graph.py
keeps it so.
"""
