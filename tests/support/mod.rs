//! Test harnesses shared by the integration tests: `mod support;` in a test file brings them in.
//! Each test file is its own crate and uses only part of them, hence `allow(dead_code)`.
#![allow(dead_code)]

pub mod bot;
pub mod browser;
pub mod deliveries;
pub mod fake_github;
pub mod fake_gitlab;
pub mod git_http;
pub mod model_server;
pub mod postgres;
pub mod repo;
pub mod scripted_llm;
pub mod serve;
