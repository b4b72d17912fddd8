"""Adapters for competition platforms: Kaggle, CodaBench/CodaLab and EvalAI."""
