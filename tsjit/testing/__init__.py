"""Helpers for tsjit's own tests (FileCheck for IR text)."""
