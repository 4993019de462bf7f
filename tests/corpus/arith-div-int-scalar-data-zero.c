// expect: - division
// options: --size N=8
void f(int N, int A[N], int B[N]) {
  for (int i = 0; i < N; i++)
    B[i] = A[i] / (A[i] - A[i]);
}
