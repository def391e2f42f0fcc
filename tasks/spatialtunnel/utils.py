"""Thin lmms-eval hooks: everything lives in spatial_tasks.spatialtunnel.tasks (nothing runs here)."""

from spatial_tasks.spatialtunnel.resplit.tasks import agg_acc_all as resplit_agg_acc_all  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_acc_amb as resplit_agg_acc_amb  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_acc_cons as resplit_agg_acc_cons  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_acc_ctr as resplit_agg_acc_ctr  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_delta as resplit_agg_delta  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_n_amb as resplit_agg_n_amb  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_n_cons as resplit_agg_n_cons  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_n_ctr as resplit_agg_n_ctr  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import agg_unparseable as resplit_agg_unparseable  # noqa: F401,E402
from spatial_tasks.spatialtunnel.resplit.tasks import (  # noqa: F401,E402
    cv_bench_doc_to_text,
    cv_bench_doc_to_visual,
    embspatial_doc_to_messages,
    embspatial_doc_to_text,
    embspatial_doc_to_visual,
    process_docs_cv_bench_depth,
    process_docs_embspatial_depth,
    process_results_cv_bench_depth,
    process_results_embspatial_depth,
)
from spatial_tasks.spatialtunnel.tasks import (  # noqa: F401
    agg_delta,
    agg_delta_s,
    agg_unparseable,
    agg_v,
    agg_v_amb,
    agg_v_cons,
    agg_v_ctr,
    agg_v_s010,
    agg_v_s030,
    doc_to_target,
    doc_to_text,
    doc_to_visual,
    pool_subtasks,
    process_docs_phase,
    process_docs_size,
    process_results_logit_phase,
    process_results_logit_size,
    process_results_phase,
    process_results_size,
)
