"""One Harbor `acp` trial's agent part, with Harbor's own code, on this machine.

Harbor runs an ACP agent in a task container in three steps: it writes a
launcher from the registry entry (`AcpAgent._build_launcher_script`), runs
its `acp_runner.py` beside the agent, then turns the runner's logs into an
ATIF trajectory (`AcpAgent.populate_context_post_run`). This script takes
those same three steps against the `wicket` on PATH, with no container:

    python run_acp.py ENTRY WORKSPACE LOGS INSTRUCTION

The permission mode and the requested model come from the variables
Harbor's agent sets (ACP_RUNNER_PERMISSION_MODE, ACP_RUNNER_REQUESTED_MODEL).
It prints the trial's context (tokens, cost, metadata) as JSON; the
runner's own files (acp-summary.json, acp-events.jsonl, trajectory.json)
are left in LOGS for the test to read.
"""

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

from harbor.agents.installed import acp_runner
from harbor.agents.installed.acp import AcpAgent, AcpRegistryEntry
from harbor.models.agent.context import AgentContext
from harbor.models.trajectories import Trajectory


def main() -> int:
    entry_path, workspace, logs, instruction = sys.argv[1:5]
    logs_dir = Path(logs)
    logs_dir.mkdir(parents=True, exist_ok=True)

    # The entry must be one Harbor accepts.
    entry = AcpRegistryEntry.model_validate_json(Path(entry_path).read_text())
    assert entry.distribution.local is not None, "the entry has no local distribution"

    agent = AcpAgent(
        logs_dir=logs_dir,
        registry_entry_path=entry_path,
        model_name=os.environ.get("ACP_RUNNER_REQUESTED_MODEL"),
        permission_mode=os.environ.get("ACP_RUNNER_PERMISSION_MODE", "allow"),
    )
    launcher = logs_dir / "acp-launch.sh"
    launcher.write_text(agent._build_launcher_script("local", entry.distribution.local))
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)

    os.chdir(workspace)
    code = asyncio.run(
        acp_runner.run(
            ["--instruction", instruction, "--logs-dir", logs, "--launcher", str(launcher)]
        )
    )

    context = AgentContext()
    agent.populate_context_post_run(context)
    trajectory_path = logs_dir / "trajectory.json"
    if trajectory_path.exists():
        # Harbor's own ATIF model: the trajectory must validate.
        Trajectory.model_validate(json.loads(trajectory_path.read_text()))
    print(json.dumps({"runner_exit": code, "context": context.model_dump(mode="json")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
