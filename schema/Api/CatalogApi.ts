/**
 * The catalog API (`/v2`) as one HttpApi: the source of the router, the OpenAPI document at
 * `/v2/openapi.json` and the typed client.
 */
import { HttpApi, OpenApi } from "effect/http-api"
import { ProblemResponses } from "../Problem.js"
import { CalendarApi } from "./CalendarApi.js"
import { CharactersApi } from "./CharactersApi.js"
import { ClaimEventsApi, ClaimsApi, ModerationApi } from "./ClaimsApi.js"
import { CompaniesApi } from "./CompaniesApi.js"
import { CoverVotesApi } from "./CoverVotesApi.js"
import { CredentialApi } from "./CredentialApi.js"
import { CreditNamesApi } from "./CreditNamesApi.js"
import { EnginesApi } from "./EnginesApi.js"
import { HealthApi } from "./HealthApi.js"
import { MediaApi, MediaWriteApi } from "./MediaApi.js"
import { MirrorApi } from "./MirrorApi.js"
import { NewsApi, NewsWriteApi } from "./NewsApi.js"
import { PersonsApi } from "./PersonsApi.js"
import { PlaytimesApi } from "./PlaytimesApi.js"
import { problemOpenApiTransform } from "./ProblemOpenApi.js"
import { ProblemsApi } from "./ProblemsApi.js"
import { ProposalModerationApi, ProposalsApi, RevisionsApi } from "./ProposalsApi.js"
import { ReleasesApi } from "./ReleasesApi.js"
import { StatsApi } from "./StatsApi.js"
import { TagsApi } from "./TagsApi.js"
import { WorksApi } from "./WorksApi.js"

export class CatalogApi extends HttpApi.make("catalog")
  .add(HealthApi)
  .add(ProblemsApi)
  .add(CredentialApi)
  .add(WorksApi)
  .add(CompaniesApi)
  .add(EnginesApi)
  .add(TagsApi)
  .add(ReleasesApi)
  .add(CalendarApi)
  .add(StatsApi)
  .add(MirrorApi)
  .add(CharactersApi)
  .add(CreditNamesApi)
  .add(PersonsApi)
  .add(ClaimsApi)
  .add(ModerationApi)
  .add(ClaimEventsApi)
  .add(ProposalsApi)
  .add(ProposalModerationApi)
  .add(RevisionsApi)
  .add(CoverVotesApi)
  .add(NewsWriteApi)
  .add(NewsApi)
  .add(PlaytimesApi)
  .add(MediaWriteApi)
  .add(MediaApi)
  // Last, so it wraps every other middleware: failures any operation can meet (bad parameters, a bad
  // body, a defect, the database away) are its errors, so every operation lists them.
  .middleware(ProblemResponses)
  .annotate(OpenApi.Title, "shiori catalog API")
  .annotate(OpenApi.Version, "2.0.0")
  .annotate(
    OpenApi.Description,
    "Reads over a visual-novel catalog, a change feed for mirrors, claims, edit proposals, cover votes, news, " +
      "playtimes and moderation. " +
      "Every 4xx/5xx is an RFC 9457 problem document (`application/problem+json`) whose `code` comes from a closed " +
      "registry; every response carries `X-Request-ID`. Any path under `/v1/` answers 410 `GONE`."
  )
{}

/**
 * The documented API: the contract plus how its errors are documented (schema/Api/ProblemOpenApi.ts).
 * The server serves it and `npm run openapi` writes it.
 */
export const CatalogApiDocumented = CatalogApi.annotate(OpenApi.Transform, problemOpenApiTransform)
