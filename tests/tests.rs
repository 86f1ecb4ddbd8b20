//! Process tests: each binary run as users run it, through assert_cmd, pipes and pseudo-terminals.

mod terminal;
mod util;

mod adversarial;
mod approve;
mod architecture;
mod argrules;
mod backends;
mod chain;
mod coding_agents;
mod commands;
mod docs;
mod elicitation;
mod exec;
mod faults;
mod forgery;
mod gate;
mod generate;
mod grants;
mod grants_doors;
mod hook;
mod hook_sandbox;
mod inbox;
mod mcp;
mod mcp_web;
mod pipeline;
mod properties;
mod provenance;
mod provenance_properties;
mod report;
mod report_html;
mod sandbox;
mod sandbox_doors;
mod stateful;
mod store;
mod web;
