"""Competition platforms (Kaggle, CodaBench/CodaLab, EvalAI): what runs there and its kit."""
