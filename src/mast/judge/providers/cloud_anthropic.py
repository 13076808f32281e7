"""Claude on AWS Bedrock and Google Vertex AI, through the anthropic SDK's own clients.

``bedrock/<model id>`` (e.g. ``bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0`` or an
inference profile such as ``us.anthropic.claude-…``) uses ``AsyncAnthropicBedrock``
(``pip install "mast-annotator[bedrock]"``, which brings boto3). It reads:
``AWS_REGION`` / ``AWS_DEFAULT_REGION``; credentials from ``AWS_BEARER_TOKEN_BEDROCK`` (a
Bedrock API key), or ``AWS_ACCESS_KEY_ID`` + ``AWS_SECRET_ACCESS_KEY`` (+
``AWS_SESSION_TOKEN``), or ``AWS_PROFILE`` and the rest of boto3's chain (SSO, instance
roles); ``ANTHROPIC_BEDROCK_BASE_URL`` or ``base_url=…`` for another endpoint.

``vertex/<model>`` (e.g. ``vertex/claude-sonnet-4-5@20250929``) uses ``AsyncAnthropicVertex``
(``pip install "mast-annotator[vertex]"``, which brings google-auth). It reads:
``CLOUD_ML_REGION`` (e.g. ``us-east5`` or ``global``), ``ANTHROPIC_VERTEX_PROJECT_ID``, and
Google application-default credentials (``GOOGLE_APPLICATION_CREDENTIALS`` or ``gcloud auth
application-default login``); ``api_key=…`` passes an OAuth access token instead;
``ANTHROPIC_VERTEX_BASE_URL`` or ``base_url=…`` for another endpoint.

Both speak the Messages API body (the SDK moves the model into the URL and adds the
platform's ``anthropic_version``), so prompt caching, usage and error translation are the
Anthropic provider's. The verdict is requested through a forced tool, which both platforms
support for every Claude model (``output_config`` JSON output is not available everywhere).
"""

from __future__ import annotations

import os
from typing import Any

from mast.errors import AuthError
from mast.judge.providers._base import CallConfig, StructuredMode, import_sdk
from mast.judge.providers.anthropic import AnthropicProvider

# The base class wants a secret to scrub from error messages; these platforms sign requests
# with credentials the SDK finds itself, so a marker stands in (it is never sent).
_NO_KEY = "platform-credentials"


class _CloudAnthropic(AnthropicProvider):
    def credentials(self) -> list[str]:
        # The marker is no secret; the platform's own credentials (SigV4 signs with the
        # secret key and sends the session token as a header) are scrubbed wherever echoed.
        own = [c for c in super().credentials() if c != _NO_KEY]
        env = ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN") if self.name == "bedrock" else ()
        return own + [os.environ[v] for v in env if os.environ.get(v)]

    def structured_mode(self, config: CallConfig) -> StructuredMode:
        if config.json_schema is None or config.structured == "none":
            return "none"
        return "tool" if config.structured == "auto" else config.structured


class BedrockProvider(_CloudAnthropic):
    """``bedrock/<model id>``: Claude on Amazon Bedrock (SigV4 or a Bedrock API key)."""

    name = "bedrock"
    sdk = "anthropic"
    env_var = "AWS_BEARER_TOKEN_BEDROCK"
    install = 'pip install "mast-annotator[bedrock]"'
    endpoint_env = "ANTHROPIC_BEDROCK_BASE_URL"

    def default_url(self) -> str | None:
        return f"https://bedrock-runtime.{self.region}.amazonaws.com"

    def __init__(
        self, *, api_key: str | None = None, base_url: str | None = None, region: str | None = None
    ) -> None:
        import_sdk("boto3", self.install)  # the SDK signs requests with botocore
        self.region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not self.region:
            raise AuthError(
                "no AWS region for Bedrock: set AWS_REGION (e.g. us-east-1)", provider=self.name
            )
        self._bedrock_key = api_key or os.environ.get(self.env_var) or None
        super().__init__(api_key=self._bedrock_key or _NO_KEY, base_url=base_url)

    def _make_client(self) -> Any:
        anthropic = import_sdk("anthropic", self.install)
        options: dict[str, Any] = {"aws_region": self.region, "max_retries": 0}
        if self.url:
            options["base_url"] = self.url
        if self._bedrock_key:
            options["api_key"] = self._bedrock_key
        return anthropic.AsyncAnthropicBedrock(**options)


class VertexProvider(_CloudAnthropic):
    """``vertex/<model>``: Claude on Google Vertex AI (application-default credentials or an
    access token)."""

    name = "vertex"
    sdk = "anthropic"
    env_var = "ANTHROPIC_VERTEX_PROJECT_ID"
    install = 'pip install "mast-annotator[vertex]"'
    endpoint_env = "ANTHROPIC_VERTEX_BASE_URL"

    def default_url(self) -> str | None:
        # As the SDK builds it from the region.
        if self.region == "global":
            return "https://aiplatform.googleapis.com/v1"
        return f"https://{self.region}-aiplatform.googleapis.com/v1"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        region: str | None = None,
        project_id: str | None = None,
    ) -> None:
        self.region = region or os.environ.get("CLOUD_ML_REGION")
        self.project_id = project_id or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID")
        missing = [
            name
            for name, value in (
                ("CLOUD_ML_REGION", self.region),
                ("ANTHROPIC_VERTEX_PROJECT_ID", self.project_id),
            )
            if not value
        ]
        if missing:
            raise AuthError(
                f"Vertex AI needs {' and '.join(missing)}: set the region (e.g. us-east5) and "
                "your Google Cloud project id",
                provider=self.name,
            )
        self._access_token = api_key
        if api_key is None:
            import_sdk("google.auth", self.install)  # application-default credentials
        super().__init__(api_key=api_key or _NO_KEY, base_url=base_url)

    def _make_client(self) -> Any:
        anthropic = import_sdk("anthropic", self.install)
        options: dict[str, Any] = {
            "region": self.region,
            "project_id": self.project_id,
            "max_retries": 0,
        }
        if self.url:
            options["base_url"] = self.url
        if self._access_token:
            options["access_token"] = self._access_token
        return anthropic.AsyncAnthropicVertex(**options)
