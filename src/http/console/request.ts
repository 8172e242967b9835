// What a console page gets (a request with its session and form) and gives back (a title, a body, a message).

import type { Services } from "../../services/services";
import type { PageContext, Raw } from "./html";
import type { Session } from "./session";

export interface ConsoleRequest {
  request: Request;
  url: URL;
  services: Services;
  session: Session | null;
  /** The form fields of a POST. */
  form: Map<string, string> | null;
  page: PageContext;
}

export interface PageResult {
  title: string;
  body: Raw;
  flash?: PageContext["flash"];
  status?: number;
}

