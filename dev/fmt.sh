#!/usr/bin/env bash
# Formats all Java sources (the build's spotless check fails on unformatted code).
exec mvn -B -q com.diffplug.spotless:spotless-maven-plugin:apply "$@"
