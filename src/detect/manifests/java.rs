//! Java: Maven's `test` phase (through `./mvnw` when the wrapper is committed), and Gradle's
//! `test` task only through a committed `./gradlew`.

use super::super::{Findings, RepoTree, Stage, proposal};

pub(super) fn read(tree: &dyn RepoTree, findings: &mut Findings) {
    if tree.has("pom.xml") {
        let (maven, why) = if tree.has("mvnw") {
            ("./mvnw", "`pom.xml`, Maven wrapper `mvnw` committed")
        } else {
            ("mvn", "`pom.xml`")
        };
        findings.propose(
            Stage::Setup,
            proposal(&[maven, "-B", "dependency:go-offline"], ".", why),
        );
        findings.propose(Stage::Validate, proposal(&[maven, "-B", "test"], ".", why));
        return;
    }
    let gradle = ["build.gradle", "build.gradle.kts"]
        .into_iter()
        .find(|file| tree.has(file));
    if let Some(build) = gradle {
        if tree.has("gradlew") {
            let why = format!("`{build}`, Gradle wrapper `gradlew` committed");
            findings.propose(Stage::Validate, proposal(&["./gradlew", "test"], ".", why));
        } else {
            findings.leave_out(
                format!("`{build}`"),
                "no Gradle wrapper (`gradlew`) is committed, so which Gradle it needs is unknown",
            );
        }
    }
}
