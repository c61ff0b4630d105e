export { type SandboxDns, startSandboxDns } from './sandbox-dns.ts';
export {
  SANDBOX_DOMAIN,
  SANDBOX_MX_HOST,
  type Sandbox,
  type SandboxServices,
  setUpSandbox,
} from './sandbox-setup.ts';
