/**
 * factledger-adk: factledger's fact memory as a memory service for Google's ADK for TypeScript,
 * reached through factledger's MCP server (`factledger mcp --http`).
 */

export {
  FactledgerMemoryService,
  type FactledgerMemoryServiceOptions,
  type FactledgerSearchResponse,
  type FactsAnswer,
  type FactsRequest,
  type ForgetAnswer,
  type ForgetRequest,
  type IngestAnswer,
  type PartitionRequest,
} from './service.js';
export {
  ENTRY_PREFIX,
  type FactledgerMemoryEntry,
  type FactMetadata,
  type FactRow,
  type ServedFact,
  WITHHELD_ID,
  type WithheldMetadata,
} from './entries.js';
export {FactledgerConnectionError, FactledgerError, FactledgerScopeError} from './errors.js';
export {AUTHOR_METADATA_KEY, wireSession, type WireSession} from './session.js';
