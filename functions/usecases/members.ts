import type { Role, User } from '#core/accounts';
import type { Actor } from '#core/people';

// STUB (foundation commit): replaced by the people work.

export interface EnrollmentLink {
  url: string;
  expires_at: string;
}

export interface MemberView extends User {
  passkeys: number;
}

export async function listMembers(_a: { orgId: string; actor: Actor }): Promise<MemberView[]> {
  throw new Error('not implemented');
}

export async function inviteMember(_a: {
  orgId: string;
  actor: Actor;
  email: string;
  role: string;
  consoleUrl: string;
  now: Date;
}): Promise<{ user: User; enrollment: EnrollmentLink; emailed: boolean }> {
  throw new Error('not implemented');
}

export async function changeMemberRole(_a: {
  orgId: string;
  actor: Actor;
  userId: string;
  role: string;
  now: Date;
}): Promise<User> {
  throw new Error('not implemented');
}

export async function removeMember(_a: {
  orgId: string;
  actor: Actor;
  userId: string;
  now: Date;
}): Promise<User> {
  throw new Error('not implemented');
}

export async function issueEnrollment(_a: {
  orgId: string;
  actor: Actor;
  userId: string;
  consoleUrl: string;
  now: Date;
}): Promise<EnrollmentLink> {
  throw new Error('not implemented');
}

export type { Role };
