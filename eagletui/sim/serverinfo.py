"""The simulator's ``/server_info`` and ``/model_info`` answers (and the startup timings in them).

Plain dict builders, apart from the HTTP handlers in :mod:`eagletui.sim.httpapi`, so the shapes that mirror
the real server's answers (shared/fixtures/sglang-0.5.17-h200/server_info.json) can be read in one place.
"""

from __future__ import annotations

from typing import Any

from eagletui.sim.plan import GRAPH_PHASES, Plan
from eagletui.sim.serverstate import ServerState


def model_info_dict(plan: Plan) -> dict[str, Any]:
    a = plan.args
    return {
        "model_path": a.model_path,
        "served_model_name": plan.served_model_name,
        "tokenizer_path": a.tokenizer_path or a.model_path,
        "is_generation": True,
        "preferred_sampling_params": None,
        "weight_version": "default",
        "load_format": a.load_format,
        "reasoning_parser": a.reasoning_parser,
        "tool_call_parser": a.tool_call_parser,
        "disaggregation_mode": "null",
        "has_image_understanding": False,
        "has_audio_understanding": False,
        "model_type": "kimi_k2"
        if plan.arch == "DeepseekV3ForCausalLM"
        else plan.arch.split("For")[0].lower(),
        "architectures": [plan.arch],
    }


def server_info_dict(st: ServerState) -> dict[str, Any]:
    """``/server_info``: the server args at the top level plus the live scheduler state."""
    plan, eng = st.plan, st.engine
    args = dict(plan.server_args)
    internal: dict[str, Any] = dict(args)
    # Shape of the real answer (shared/fixtures/sglang-0.5.17-h200/server_info.json): the server args at
    # the top level plus status/max_total_num_tokens/max_req_input_len/startup_time/internal_states/
    # version/kv_events; internal_states[0] = the scheduler's copy of the args plus its live state.
    internal.update(
        max_speculative_num_draft_tokens=plan.ndt if plan.spec else None,
        last_gen_throughput=eng.last_gen_throughput,
        memory_usage={
            "weight": round(plan.weight_gb + plan.draft_gb, 2),
            "kvcache": round(plan.kv_gb + plan.draft_kv_gb, 2),
            "startup_available": round(plan.startup_available_gb, 3),
            "token_capacity": plan.max_total_tokens,
            "token_capacity_swa": None,
            "graph": {k: round(plan.graph_gb.get(k, 0.0), 3) for k in GRAPH_PHASES},
        },
        startup_time=startup_time_dict(plan),
        effective_max_running_requests_per_dp=plan.max_running,
    )
    if eng.adaptive is not None:
        # the scheduler's args overlay every override: each tier swap's ``adaptive_spec.restore`` sets
        # them (0.5.23 ``scheduler_components/internal_state.py`` L45-48), so internal_states shows the
        # active tier while the top level keeps the launch's
        internal.update(
            speculative_num_steps=eng.adaptive.active, speculative_num_draft_tokens=eng.adaptive.active + 1
        )
    if plan.spec and eng.avg_spec_accept_length is not None:
        internal["avg_spec_accept_length"] = eng.avg_spec_accept_length
    if eng.record_step_time:  # JSON object keys are strings: {"1": [0.0058, …], "6": […]}
        internal["step_time_dict"] = {str(k): list(v) for k, v in eng.step_time_dict.items()}
    out = dict(args)
    out.update(
        status="ready" if st.ready else "starting",
        max_total_num_tokens=plan.max_total_tokens,
        max_req_input_len=plan.context_len - 6,
        startup_time=startup_time_dict(plan),
        internal_states=[internal],
        version=plan.args.sim_version,
        kv_events=None,
    )
    return out


def startup_time_dict(plan: Plan) -> dict[str, Any]:
    """``build_engine_startup_time`` (sglang/srt/entrypoints/engine.py): the phases of
    ``Engine startup timings`` with ``cuda_graph`` as a dict of all six capture phases."""
    t = plan.timings
    return {
        "load_weight": t.get("load_weight", 0.0),
        "kv_cache_allocation": t.get("kv_cache_allocation", 0.0),
        "scheduler_e2e": t.get("scheduler_e2e", 0.0),
        "cuda_graph": {k: t.get(f"graph:{k}", 0.0) for k in GRAPH_PHASES},
        "tokenizer_e2e": t.get("tokenizer_e2e", 0.0),
    }
