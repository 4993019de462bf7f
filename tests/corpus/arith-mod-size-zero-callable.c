// expect: - division by zero
// options: --size N=8,M=0
// via: callable
void f(int N, int M, int A[N], int B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i] % M;
}
