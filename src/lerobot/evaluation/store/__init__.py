"""What an evaluation leaves on disk: episodes.jsonl as episodes end (`journal`), the output
directory and the settings a resume must match (`output_dir`), eval_info.json with the run's
provenance (`result_files`, `provenance`), and sharded runs joined into one (`merge`).
"""
