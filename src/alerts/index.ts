export type { AlertSources } from './alert-checks.ts';
export type { Alert, AlertKind, AlertSettings, AlertSubject, AlertSubjectType } from './alert-model.ts';
export { startAlertSweeper } from './alert-sweeper.ts';
export { type AlertSystemOptions, createAlertSystem } from './alert-system.ts';
export { type AlertSettingsChange, AlertsService, type ArrivedMail } from './alerts-service.ts';
